#include "ferry/base/xml_escape.h"

namespace ferry {

std::string EscapeXml(std::string_view text, XmlQuotes quotes) {
  const bool escape_quotes = quotes == XmlQuotes::kEscape;
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += escape_quotes ? "&quot;" : "\""; break;
      case '\'': out += escape_quotes ? "&apos;" : "'"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace ferry
