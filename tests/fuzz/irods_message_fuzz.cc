// Fuzzes the iRODS message framing: the 4-byte header length, the XML
// MsgHeader_PI, and the msg / error / bs sections (DecodeMessage), and the
// framing SessionPool reads a connection with (NewIrodsFraming).
//
// Whatever the bytes: DecodeMessage answers a message or DataLoss; a
// message without an error section encodes and decodes back to itself;
// the framing reader hands out only records DecodeMessage accepts, the
// same ones whether fed whole or a byte at a time; and an error section,
// when there is one, is read as the client reads it (RErrMsg_PI).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/irods/irods_protocol.h"
#include "ferry/irods/irods_xml.h"
#include "fuzz_check.h"

namespace {

using ferry::fuzz::Check;
namespace irods = ferry::irods;

bool Same(const irods::Message& a, const irods::Message& b) {
  return a.type == b.type && a.int_info == b.int_info && a.msg == b.msg && a.error == b.error &&
         a.bs == b.bs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string copy(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  const std::string_view in(copy);

  absl::StatusOr<irods::Message> m = irods::DecodeMessage(in);
  if (m.ok()) {
    if (m->error.empty()) {
      absl::StatusOr<irods::Message> back =
          irods::DecodeMessage(irods::EncodeMessage(m->type, m->int_info, m->msg, m->bs));
      Check(back.ok() && Same(*back, *m));
    } else if (auto e = irods::ParseXml(m->error); e.ok()) {
      if (const irods::XmlNode* em = (*e)->Child("RErrMsg_PI")) (void)em->Text("msg");
    }
    (void)irods::IrodsError(m->int_info, "fuzz", m->type);
  } else {
    Check(m.status().code() == absl::StatusCode::kDataLoss);
  }

  const auto framing = irods::NewIrodsFraming();
  auto whole = framing->NewReader();
  std::vector<std::string> records;
  const absl::Status whole_status = whole->Consume(in, &records);
  for (const std::string& r : records) Check(irods::DecodeMessage(r).ok());
  if (in.size() <= 512) {  // byte at a time: quadratic, so only for small inputs
    auto bytes = framing->NewReader();
    std::vector<std::string> byte_records;
    absl::Status byte_status;
    for (size_t i = 0; i < in.size() && byte_status.ok(); ++i) {
      const std::string one(1, in[i]);
      byte_status = bytes->Consume(one, &byte_records);
    }
    Check(byte_status.ok() == whole_status.ok());
    Check(byte_records == records);
  }
  return 0;
}
