// Tag scanning over S3 XML replies. Linear in the body; no allocation but
// the result vector and unescaped strings.
#include "ferry/s3/s3_xml.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/base/xml_escape.h"

namespace ferry::s3 {
namespace {

// Appends what `entity` ("&name;") stands for: one of XML's five named
// entities or a character reference (&#38; &#x26;); any other verbatim.
void AppendEntity(std::string_view entity, std::string* out) {
  const std::string_view name = entity.substr(1, entity.size() - 2);
  if (name == "amp") {
    out->push_back('&');
  } else if (name == "lt") {
    out->push_back('<');
  } else if (name == "gt") {
    out->push_back('>');
  } else if (name == "quot") {
    out->push_back('"');
  } else if (name == "apos") {
    out->push_back('\'');
  } else if (!name.empty() && name[0] == '#') {
    const std::string num(name.substr(1));
    const long cp = (!num.empty() && (num[0] == 'x' || num[0] == 'X'))
                        ? std::strtol(num.c_str() + 1, nullptr, 16)
                        : std::strtol(num.c_str(), nullptr, 10);
    if (cp < 0 || cp > 0x10FFFF) {
      out->append(entity);  // not a code point: kept as the server sent it
    } else {
      AppendUtf8(static_cast<uint32_t>(cp), out);
    }
  } else {
    out->append(entity);
  }
}

}  // namespace

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string close = absl::StrCat("</", std::string(tag), ">");
  size_t pos = 0;
  while (true) {
    size_t open = xml.find('<', pos);
    if (open == std::string_view::npos) break;
    const size_t name_start = open + 1;
    if (xml.compare(name_start, tag.size(), tag) != 0) {
      pos = name_start;
      continue;
    }
    const size_t after = name_start + tag.size();
    if (after >= xml.size() || (xml[after] != '>' && xml[after] != ' ' && xml[after] != '/')) {
      pos = name_start;
      continue;
    }
    const size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') {  // <Tag/>: empty
      out.emplace_back();
      pos = gt + 1;
      continue;
    }
    const size_t end = xml.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(gt + 1, end - gt - 1));
    pos = end + close.size();
  }
  return out;
}

std::string XmlText(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> e = XmlElements(xml, tag);
  return e.empty() ? std::string() : XmlUnescape(e.front());
}

std::string XmlUnescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t amp = s.find('&', i);
    const size_t semi = amp == std::string_view::npos ? amp : s.find(';', amp);
    if (semi == std::string_view::npos) {  // no entity left: the rest is text
      out.append(s.substr(i));
      break;
    }
    out.append(s.substr(i, amp - i));
    AppendEntity(s.substr(amp, semi - amp + 1), &out);
    i = semi + 1;
  }
  return out;
}

std::string XmlEscape(std::string_view s) { return EscapeXml(s, XmlQuotes::kEscape); }

std::string CreateBucketBody(std::string_view region) {
  if (region.empty() || region == "us-east-1") return "";
  return absl::StrCat(
      "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<LocationConstraint>",
      XmlEscape(region), "</LocationConstraint></CreateBucketConfiguration>");
}

}  // namespace ferry::s3
