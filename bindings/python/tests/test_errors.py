"""C++ status codes become exceptions that are both ferry.Error and the
matching builtin, with the C++ code name and message."""

import pytest

import ferry
from ferry import _core

MAPPING = [
    ("NotFound", ferry.NotFoundError, FileNotFoundError),
    ("AlreadyExists", ferry.AlreadyExistsError, FileExistsError),
    ("PermissionDenied", ferry.PermissionDeniedError, PermissionError),
    ("Unauthenticated", ferry.UnauthenticatedError, PermissionError),
    ("DeadlineExceeded", ferry.DeadlineExceededError, TimeoutError),
    ("Unavailable", ferry.UnavailableError, ConnectionError),
    ("InvalidArgument", ferry.InvalidArgumentError, ValueError),
    ("DataLoss", ferry.ProtocolError, ferry.Error),
]


@pytest.mark.parametrize("code,cls,builtin", MAPPING)
def test_status_code_maps_to_class_and_builtin(code, cls, builtin):
    with pytest.raises(builtin) as info:
        _core._raise_status(code, f"op /x: {code}")
    assert type(info.value) is cls
    assert isinstance(info.value, ferry.Error)
    assert info.value.code == code
    assert str(info.value) == f"op /x: {code}"


@pytest.mark.parametrize(
    "code", ["Cancelled", "Unknown", "ResourceExhausted", "FailedPrecondition",
             "Aborted", "OutOfRange", "Unimplemented", "Internal"])
def test_other_codes_raise_the_base_error_with_their_code(code):
    with pytest.raises(ferry.Error) as info:
        _core._raise_status(code, "object changed: etag mismatch")
    assert type(info.value) is ferry.Error
    assert info.value.code == code
    assert str(info.value) == "object changed: etag mismatch"


def test_protocol_error_is_not_an_os_error():
    assert not issubclass(ferry.ProtocolError, OSError)
    assert ferry.ProtocolError.code == "DataLoss"


def test_os_error_subclasses_keep_the_message_unchanged():
    with pytest.raises(FileNotFoundError) as info:
        _core._raise_status("NotFound", "NFS3 LOOKUP /export/a: NFS3ERR_NOENT")
    assert info.value.args == ("NFS3 LOOKUP /export/a: NFS3ERR_NOENT",)
    assert info.value.errno is None


def test_exceptions_constructed_from_python_carry_their_class_code():
    assert ferry.NotFoundError("x").code == "NotFound"
    assert ferry.Error("x").code == "Unknown"
    assert ferry.UnavailableError.__module__ == "ferry"


def test_unknown_code_name_is_a_value_error():
    with pytest.raises(ValueError, match="no error code named"):
        _core._raise_status("NoSuchCode", "x")
