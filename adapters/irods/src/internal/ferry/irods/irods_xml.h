// The iRODS XML dialect of packing instructions: a struct is an element
// whose children are its fields in declaration order; repeated fields are
// repeated siblings; nested structs nest. XmlWriter writes one, ParseXml
// reads one into a tree. The server escapes only &, < and >, and clients
// see quotes and back-ticks raw; the reader also takes the standard
// entities and numeric references.
#ifndef FERRY_IRODS_IRODS_XML_H_
#define FERRY_IRODS_IRODS_XML_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ferry::irods {

struct XmlNode {
  std::string name;
  std::string text;
  std::vector<std::unique_ptr<XmlNode>> children;

  // The first child named `name`, or null.
  const XmlNode* Child(std::string_view child) const;
  // Every child named `name`, in order.
  std::vector<const XmlNode*> All(std::string_view child) const;
  // The text of the first child named `name` ("" if none).
  std::string_view Text(std::string_view child) const;
  // That text as an integer; `fallback` if absent or not a number.
  int64_t Int(std::string_view child, int64_t fallback = 0) const;
};

// Parses one element. DataLoss for anything else: a syntax error, a second
// root, nesting deeper than 32, an unknown entity.
absl::StatusOr<std::unique_ptr<XmlNode>> ParseXml(std::string_view xml);

// Escapes &, < and > as the iRODS server does (quotes kept: it reads &apos;
// back as a backtick).
std::string EscapeXml(std::string_view text);

// Writes one packing instruction: Open/Close around fields written in order.
class XmlWriter {
 public:
  XmlWriter& Open(std::string_view name);
  XmlWriter& Close(std::string_view name);
  XmlWriter& Str(std::string_view tag, std::string_view value);
  XmlWriter& Int(std::string_view tag, int64_t value);
  // A KeyValPair_PI: all keywords, then all values.
  XmlWriter& KeyVals(const std::vector<std::pair<std::string, std::string>>& kv);
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace ferry::irods

#endif  // FERRY_IRODS_IRODS_XML_H_
