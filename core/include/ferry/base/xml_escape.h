// XML character escaping, for the adapters whose protocols speak XML (S3's
// request bodies, iRODS's packing instructions).
//
//   ferry::EscapeXml("a<b & 'c'", ferry::XmlQuotes::kEscape)
//       -> "a&lt;b &amp; &apos;c&apos;"
//
// Thread-safety: a pure function.
#ifndef FERRY_BASE_XML_ESCAPE_H_
#define FERRY_BASE_XML_ESCAPE_H_

#include <string>
#include <string_view>

namespace ferry {

// Whether " and ' are written as &quot; and &apos; too. Some parsers want
// them kept: the iRODS server reads &apos; back as a backtick.
enum class XmlQuotes { kKeep, kEscape };

// `text` with &, < and > (and, with kEscape, " and ') written as entities.
std::string EscapeXml(std::string_view text, XmlQuotes quotes);

}  // namespace ferry

#endif  // FERRY_BASE_XML_ESCAPE_H_
