package io.ferry;

/**
 * A directory a walk could not read, or an entry it refused (records.proto WalkError); the walk
 * went on past either. {@code code} is the absl::StatusCode number (google.rpc.Code: 5 NOT_FOUND,
 * 7 PERMISSION_DENIED, ...), {@code message} ferry's message; {@code path} is relative to the
 * walk's root ("" for the root). For a refused entry (a listed name that is not one safe
 * component, a directory already walked) {@code refused} is true, {@code path} is the directory
 * that listed it and {@code name} the raw name as listed.
 */
public record WalkError(String path, int code, String message, boolean refused, String name) {}
