package main

import "fmt"

// iRODS error codes the peer returns (irods/lib/core/include/irods/rodsErrorTable.h).
const (
	SYS_API_INPUT_ERR              = -14000
	SYS_NO_API_PRIV                = -13000
	SYS_INVALID_INPUT_PARAM        = -130000
	SYS_UNMATCHED_API_NUM          = -12000
	SYS_BAD_FILE_DESCRIPTOR        = -345000
	SYS_FILE_DESC_OUT_OF_RANGE     = -346000
	SYS_INTERNAL_ERR               = -154000
	USER_FILE_DOES_NOT_EXIST       = -310000
	OVERWRITE_WITHOUT_FORCE_FLAG   = -312000
	OBJ_PATH_DOES_NOT_EXIST        = -358000
	CAT_NO_ROWS_FOUND              = -808000
	CAT_UNKNOWN_COLLECTION         = -814000
	CAT_UNKNOWN_FILE               = -817000
	CAT_NO_ACCESS_PERMISSION       = -818000
	CAT_INVALID_AUTHENTICATION     = -826000
	CAT_INVALID_USER               = -827000
	CAT_NAME_EXISTS_AS_COLLECTION  = -833000
	CATALOG_ALREADY_HAS_ITEM_BY_THAT_NAME = -809000
	CAT_NAME_EXISTS_AS_DATAOBJ     = -834000
	CAT_COLLECTION_NOT_EMPTY       = -821000
	CAT_INVALID_ARGUMENT           = -816000
	CAT_SQL_ERR                    = -806000
	CAT_UNKNOWN_SPECIFIC_QUERY     = -853000
	CAT_INSUFFICIENT_PRIVILEGE     = -830000
	USER_INPUT_PATH_ERR            = -317000
	SYS_COPY_ALREADY_IN_RESC       = -46000
	SYS_AUTH_EXPIRED               = -1051000
	AUTHENTICATION_ERROR           = -1052000
	SYS_REPLICA_ACCESS_TOKEN_ERROR = -169000
	USER_INCOMPATIBLE_OPEN_FLAGS   = -404000
	CAT_INVALID_OBJ_COUNT          = -819000
)

// irodsError is what a handler returns to send intInfo = code and an
// RError_PI with msg to the client.
type irodsError struct {
	code int
	msg  string
}

func (e *irodsError) Error() string { return fmt.Sprintf("%d: %s", e.code, e.msg) }

func fail(code int, format string, args ...any) *irodsError {
	return &irodsError{code, fmt.Sprintf(format, args...)}
}

var errUnknownUser = fail(CAT_INVALID_USER, "unknown user")

func rErrorPI(code int, msg string) []byte {
	return pack("RError_PI", func(b *builder) {
		b.int("count", 1)
		b.nested("RErrMsg_PI", func(b *builder) {
			b.int("status", int64(code))
			b.str("msg", msg)
		})
	})
}
