// Minimal reading of S3's XML replies (errors, listings, multipart): S3
// bodies are flat, namespace-free in the parts we read, and tags do not
// nest inside themselves, so finding <Tag>...</Tag> is enough; no DOM.
//
//   std::string code = ferry::s3::XmlText(body, "Code");   // "NoSuchKey"
//   for (std::string_view c : ferry::s3::XmlElements(body, "Contents")) ...
#ifndef FERRY_S3_S3_XML_H_
#define FERRY_S3_S3_XML_H_

#include <string>
#include <string_view>
#include <vector>

namespace ferry::s3 {

// The inner text of each <tag>...</tag> (also <tag attr="...">) in `xml`,
// in order, not unescaped. Views into `xml`.
std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag);

// The unescaped inner text of the first <tag>, or "" if there is none.
std::string XmlText(std::string_view xml, std::string_view tag);

// Replaces &amp; &lt; &gt; &quot; &apos; and numeric &#N; / &#xN;.
std::string XmlUnescape(std::string_view s);

// Escapes & < > " ' for element text.
std::string XmlEscape(std::string_view s);

// CreateBucket's body for `region`: a CreateBucketConfiguration naming its
// LocationConstraint, or "" for us-east-1 (and ""), which S3 wants without
// one (it refuses "us-east-1" as a constraint).
std::string CreateBucketBody(std::string_view region);

}  // namespace ferry::s3

#endif  // FERRY_S3_S3_XML_H_
