// Fuzzes the iRODS packing-instruction XML reader (ParseXml), which reads
// every message body an iRODS server sends.
//
// Whatever the bytes: a tree or DataLoss; the accessors work on any tree;
// and a tree written back out (text escaped by the production EscapeXml)
// parses to the same tree.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/irods/irods_xml.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;
using ferry::irods::XmlNode;

void Write(const XmlNode& n, std::string* out) {
  out->append("<").append(n.name).append(">");
  out->append(ferry::irods::EscapeXml(n.text));
  for (const auto& c : n.children) Write(*c, out);
  out->append("</").append(n.name).append(">");
}

bool Same(const XmlNode& a, const XmlNode& b) {
  if (a.name != b.name || a.text != b.text || a.children.size() != b.children.size()) return false;
  for (size_t i = 0; i < a.children.size(); ++i) {
    if (!Same(*a.children[i], *b.children[i])) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string copy(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  absl::StatusOr<std::unique_ptr<XmlNode>> n = ferry::irods::ParseXml(copy);
  if (!n.ok()) {
    Check(n.status().code() == absl::StatusCode::kDataLoss);
    return 0;
  }
  (*n)->Int("x");
  (*n)->All("value");
  (*n)->Text("msg");
  std::string again;
  Write(**n, &again);
  absl::StatusOr<std::unique_ptr<XmlNode>> back = ferry::irods::ParseXml(again);
  Check(back.ok() && Same(**back, **n));
  return 0;
}
