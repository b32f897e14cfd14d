package io.ferry;

/** What a copy moved (ferry::TransferStats): payload bytes, files, seconds. */
public record TransferStats(long bytes, long files, double seconds) {}
