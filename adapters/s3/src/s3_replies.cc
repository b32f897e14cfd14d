// S3 reply bodies read with the tag scanner of s3_xml.h.
#include "ferry/s3/s3_replies.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/s3/s3_error.h"
#include "ferry/s3/s3_xml.h"

namespace ferry::s3 {
namespace {

const std::string* FindHeader(const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

// A size from the server: a decimal that fits int64 and is not negative
// (a negative one would later be taken for "unknown" or wrap as an offset).
bool ParseSize(std::string_view text, int64_t* size) {
  return absl::SimpleAtoi(ToAbsl(text), size) && *size >= 0;
}

}  // namespace

absl::Status CheckContentRangeStart(const std::string* content_range, int64_t offset) {
  if (content_range == nullptr) return absl::OkStatus();
  std::string_view text = *content_range;
  // "bytes FIRST-LAST/SIZE": FIRST <= LAST < SIZE, SIZE may be "*".
  int64_t first = 0, last = 0, size = 0;
  const size_t dash = text.find('-');
  const size_t slash = text.find('/');
  const bool readable =
      absl::StartsWithIgnoreCase(ToAbsl(text), "bytes ") && dash != std::string_view::npos &&
      slash != std::string_view::npos && dash < slash &&
      ParseSize(text.substr(6, dash - 6), &first) &&
      ParseSize(text.substr(dash + 1, slash - dash - 1), &last) && first <= last &&
      (text.substr(slash + 1) == "*" || (ParseSize(text.substr(slash + 1), &size) && last < size));
  if (!readable) {
    return absl::DataLossError(
        absl::StrCat("unreadable Content-Range \"", ToAbsl(text), "\" in a 206 reply"));
  }
  if (first != offset) {
    return absl::DataLossError(absl::StrCat("the 206 reply's Content-Range \"", ToAbsl(text),
                                            "\" starts at ", first, ", not at the offset ",
                                            offset, " asked for"));
  }
  return absl::OkStatus();
}

absl::Time ParseHttpDate(const std::string* value) {
  absl::Time t = absl::InfinitePast();
  if (value == nullptr) return t;
  std::string err;
  if (!absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", *value, absl::UTCTimeZone(), &t, &err)) {
    return absl::InfinitePast();
  }
  return t;
}

absl::Time ParseIsoDate(const std::string& value) {
  absl::Time t = absl::InfinitePast();
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, value, &t, &err)) return absl::InfinitePast();
  return t;
}

absl::StatusOr<ObjectInfo> ParseHeadObjectReply(
    const std::vector<std::pair<std::string, std::string>>& headers) {
  ObjectInfo info;
  const std::string* len = FindHeader(headers, "content-length");
  if (len == nullptr || !ParseSize(*len, &info.size)) {
    return absl::DataLossError("S3 HeadObject: reply without a valid Content-Length");
  }
  if (const std::string* etag = FindHeader(headers, "etag")) info.etag = *etag;
  info.last_modified = ParseHttpDate(FindHeader(headers, "last-modified"));
  constexpr absl::string_view kMeta = "x-amz-meta-";
  for (const auto& [name, value] : headers) {
    if (name.size() > kMeta.size() && absl::StartsWithIgnoreCase(name, kMeta)) {
      info.metadata.emplace_back(absl::AsciiStrToLower(name.substr(kMeta.size())), value);
    }
  }
  return info;
}

absl::StatusOr<ListObjectsPage> ParseListObjectsV2Reply(std::string_view body) {
  ListObjectsPage page;
  for (std::string_view c : XmlElements(body, "Contents")) {
    ListedObject o;
    o.key = XmlText(c, "Key");
    if (!ParseSize(XmlText(c, "Size"), &o.size)) {
      return absl::DataLossError(
          absl::StrCat("S3 ListObjectsV2: object \"", o.key, "\" without a valid Size"));
    }
    o.etag = XmlText(c, "ETag");
    o.last_modified = ParseIsoDate(XmlText(c, "LastModified"));
    page.objects.push_back(std::move(o));
  }
  for (std::string_view p : XmlElements(body, "CommonPrefixes")) {
    page.common_prefixes.push_back(XmlText(p, "Prefix"));
  }
  if (XmlText(body, "IsTruncated") == "true") {
    page.next_continuation_token = XmlText(body, "NextContinuationToken");
    if (page.next_continuation_token.empty()) {
      return absl::DataLossError("S3 ListObjectsV2: truncated page without a NextContinuationToken");
    }
  }
  return page;
}

std::vector<std::string> ParseListBucketsReply(std::string_view body) {
  std::vector<std::string> names;
  for (std::string_view b : XmlElements(body, "Bucket")) names.push_back(XmlText(b, "Name"));
  return names;
}

absl::StatusOr<std::string> ParseInitiateMultipartReply(std::string_view body) {
  std::string id = XmlText(body, "UploadId");
  if (id.empty()) return absl::DataLossError("S3 CreateMultipartUpload: reply without an UploadId");
  return id;
}

absl::StatusOr<std::string> ParseCompleteMultipartReply(std::string_view body) {
  // S3 may answer 200 and put the error in the body (the request ran long).
  if (!XmlElements(body, "Error").empty()) {
    return S3ErrorStatus("CompleteMultipartUpload", "", 200, body, "");
  }
  return XmlText(body, "ETag");
}

absl::StatusOr<std::string> ParseCopyReply(std::string_view operation, std::string_view resource,
                                           std::string_view body) {
  if (!XmlElements(body, "Error").empty()) return S3ErrorStatus(operation, resource, 200, body, "");
  std::string etag = XmlText(body, "ETag");
  if (etag.empty()) {
    return absl::DataLossError(absl::StrCat("S3 ", ToAbsl(operation), ": reply without an ETag"));
  }
  return etag;
}

ListUploadsPage ParseListMultipartUploadsReply(std::string_view body) {
  ListUploadsPage page;
  for (std::string_view u : XmlElements(body, "Upload")) {
    page.uploads.push_back({XmlText(u, "Key"), XmlText(u, "UploadId"), ParseIsoDate(XmlText(u, "Initiated"))});
  }
  page.truncated = XmlText(body, "IsTruncated") == "true";
  page.next_key_marker = XmlText(body, "NextKeyMarker");
  page.next_upload_id_marker = XmlText(body, "NextUploadIdMarker");
  return page;
}

absl::StatusOr<ListPartsPage> ParseListPartsReply(std::string_view resource, std::string_view body) {
  ListPartsPage page;
  for (std::string_view p : XmlElements(body, "Part")) {
    UploadedPartInfo part;
    if (!absl::SimpleAtoi(XmlText(p, "PartNumber"), &part.part_number) ||
        !ParseSize(XmlText(p, "Size"), &part.size)) {
      return absl::DataLossError(absl::StrCat("S3 ListParts ", ToAbsl(resource),
                                              ": a part without a valid PartNumber or Size"));
    }
    part.etag = XmlText(p, "ETag");
    page.parts.push_back(std::move(part));
  }
  page.truncated = XmlText(body, "IsTruncated") == "true";
  if (page.truncated && !absl::SimpleAtoi(XmlText(body, "NextPartNumberMarker"), &page.next_marker)) {
    return absl::DataLossError(absl::StrCat("S3 ListParts ", ToAbsl(resource),
                                            ": truncated page without a NextPartNumberMarker"));
  }
  return page;
}

}  // namespace ferry::s3
