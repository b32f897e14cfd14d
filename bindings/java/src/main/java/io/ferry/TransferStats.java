package io.ferry;

import com.google.protobuf.InvalidProtocolBufferException;

/**
 * What one copy, download or upload did: records.proto's TransferStats (the same bytes Python's
 * {@code ferry.TransferStats} decodes), as a Java record.
 *
 * @param operation "download", "upload" or "copy"
 * @param bytes payload bytes moved
 * @param files files copied (1 for a single file)
 * @param bytesFetched bytes received from the store (refetches included)
 * @param bytesUploaded part (or put) bytes the store accepted
 * @param requests ranged GETs, NFS READs/WRITEs, iRODS reads/writes that succeeded
 * @param seconds wall time from start to the last byte
 * @param peakMemoryBytes the FerryRuntime's memory budget peak during it
 * @param entriesRefused a tree's listed names refused as unsafe (never copied)
 * @param filesSkipped a tree's symlinks and special files (never copied)
 * @param warnings one line for each refused or skipped entry
 */
public record TransferStats(
    String operation,
    String source,
    String destination,
    long bytes,
    long files,
    long bytesFetched,
    long bytesUploaded,
    long requests,
    long parts,
    long retries,
    double seconds,
    long peakMemoryBytes,
    long entriesRefused,
    long filesSkipped,
    java.util.List<String> warnings) {

  static TransferStats fromRecord(byte[] bytes) throws ProtocolException {
    io.ferry.records.TransferStats r;
    try {
      r = io.ferry.records.TransferStats.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw new ProtocolException("transfer stats do not decode: " + e.getMessage());
    }
    String op = switch (r.getOperation()) {
      case OPERATION_DOWNLOAD -> "download";
      case OPERATION_UPLOAD -> "upload";
      default -> "copy";
    };
    return new TransferStats(op, r.getSource(), r.getDestination(), r.getBytes(), r.getFiles(),
        r.getBytesFetched(), r.getBytesUploaded(), r.getRequests(), r.getParts(), r.getRetries(),
        r.getElapsedNs() / 1e9, r.getPeakMemoryBytes(), r.getEntriesRefused(),
        r.getFilesSkipped(), java.util.List.copyOf(r.getWarningsList()));
  }
}
