package io.ferry;

/**
 * A directory a walk could not read (records.proto WalkError); the walk went on past it.
 * {@code code} is the absl::StatusCode number (google.rpc.Code: 5 NOT_FOUND, 7
 * PERMISSION_DENIED, ...), {@code message} ferry's message; {@code path} is relative to the
 * walk's root ("" for the root).
 */
public record WalkError(String path, int code, String message) {}
