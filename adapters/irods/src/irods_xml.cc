#include "ferry/irods/irods_xml.h"

#include <charconv>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ferry/base/strings.h"
#include "ferry/base/xml_escape.h"

namespace ferry::irods {
namespace {

constexpr int kMaxDepth = 32;

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == ':';
}

class Parser {
 public:
  explicit Parser(std::string_view in) : in_(in) {}

  absl::StatusOr<std::unique_ptr<XmlNode>> Document() {
    SkipProlog();
    auto root = Element(0);
    if (!root.ok()) return root;
    SkipSpace();
    if (pos_ != in_.size()) return Error("content after the root element");
    return root;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::DataLossError(Cat("iRODS XML: ", what, " at byte ", pos_));
  }
  void SkipSpace() {
    while (pos_ < in_.size() && absl::ascii_isspace(static_cast<unsigned char>(in_[pos_]))) ++pos_;
  }
  void SkipProlog() {
    SkipSpace();
    if (in_.substr(pos_, 5) == "<?xml") {
      size_t end = in_.find("?>", pos_);
      pos_ = end == std::string_view::npos ? in_.size() : end + 2;
      SkipSpace();
    }
  }
  absl::StatusOr<std::string_view> Name() {
    size_t start = pos_;
    while (pos_ < in_.size() && IsNameChar(in_[pos_])) ++pos_;
    if (pos_ == start) return Error("expected a tag name");
    return in_.substr(start, pos_ - start);
  }
  absl::Status Entity(std::string* out) {
    size_t end = in_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 12) return Error("unterminated entity");
    std::string_view e = in_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    if (e == "amp") out->push_back('&');
    else if (e == "lt") out->push_back('<');
    else if (e == "gt") out->push_back('>');
    else if (e == "quot") out->push_back('"');
    else if (e == "apos") out->push_back('\'');
    else if (!e.empty() && e[0] == '#') {
      uint32_t cp = 0;
      std::string_view digits = e.substr(1);
      int base = 10;
      if (!digits.empty() && (digits[0] == 'x' || digits[0] == 'X')) {
        digits.remove_prefix(1);
        base = 16;
      }
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, base);
      if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty() || cp > 0x10FFFF) {
        return Error("bad character reference");
      }
      AppendUtf8(cp, out);
    } else {
      return Error(Cat("unknown entity &", e, ";"));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<XmlNode>> Element(int depth) {
    if (depth > kMaxDepth) return Error("nested too deep");
    if (pos_ >= in_.size() || in_[pos_] != '<') return Error("expected '<'");
    ++pos_;
    auto name = Name();
    if (!name.ok()) return name.status();
    auto node = std::make_unique<XmlNode>();
    node->name = std::string(*name);
    SkipSpace();
    if (in_.substr(pos_, 2) == "/>") {
      pos_ += 2;
      return node;
    }
    if (pos_ >= in_.size() || in_[pos_] != '>') return Error("attributes are not part of iRODS XML");
    ++pos_;
    for (;;) {
      if (pos_ >= in_.size()) return Error(Cat("unterminated <", node->name, ">"));
      char c = in_[pos_];
      if (c == '<') {
        if (in_.substr(pos_, 2) == "</") {
          pos_ += 2;
          auto close = Name();
          if (!close.ok()) return close.status();
          if (*close != node->name) {
            return Error(Cat("</", *close, "> closes <", node->name, ">"));
          }
          SkipSpace();
          if (pos_ >= in_.size() || in_[pos_] != '>') return Error("expected '>'");
          ++pos_;
          return node;
        }
        auto child = Element(depth + 1);
        if (!child.ok()) return child.status();
        node->children.push_back(*std::move(child));
      } else if (c == '&') {
        if (absl::Status s = Entity(&node->text); !s.ok()) return s;
      } else {
        node->text.push_back(c);
        ++pos_;
      }
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

const XmlNode* XmlNode::Child(std::string_view child) const {
  for (const auto& c : children) {
    if (c->name == child) return c.get();
  }
  return nullptr;
}

std::vector<const XmlNode*> XmlNode::All(std::string_view child) const {
  std::vector<const XmlNode*> out;
  for (const auto& c : children) {
    if (c->name == child) out.push_back(c.get());
  }
  return out;
}

std::string_view XmlNode::Text(std::string_view child) const {
  const XmlNode* c = Child(child);
  return c == nullptr ? std::string_view() : std::string_view(c->text);
}

int64_t XmlNode::Int(std::string_view child, int64_t fallback) const {
  int64_t v = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(ToAbsl(Text(child))), &v) ? v : fallback;
}

absl::StatusOr<std::unique_ptr<XmlNode>> ParseXml(std::string_view xml) {
  return Parser(xml).Document();
}

std::string EscapeXml(std::string_view text) { return ferry::EscapeXml(text, XmlQuotes::kKeep); }

XmlWriter& XmlWriter::Open(std::string_view name) {
  CatAppend(&out_, "<", name, ">");
  return *this;
}

XmlWriter& XmlWriter::Close(std::string_view name) {
  CatAppend(&out_, "</", name, ">\n");
  return *this;
}

XmlWriter& XmlWriter::Str(std::string_view tag, std::string_view value) {
  CatAppend(&out_, "<", tag, ">", EscapeXml(value), "</", tag, ">\n");
  return *this;
}

XmlWriter& XmlWriter::Int(std::string_view tag, int64_t value) {
  CatAppend(&out_, "<", tag, ">", value, "</", tag, ">\n");
  return *this;
}

XmlWriter& XmlWriter::KeyVals(const std::vector<std::pair<std::string, std::string>>& kv) {
  Open("KeyValPair_PI").Int("ssLen", static_cast<int64_t>(kv.size()));
  for (const auto& [k, v] : kv) Str("keyWord", k);
  for (const auto& [k, v] : kv) Str("svalue", v);
  return Close("KeyValPair_PI");
}

}  // namespace ferry::irods
