// libFuzzer target: the iRODS adapter's readers of server bytes (frames and
// packing-instruction XML) must reject garbage with a Status, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ferry/irods/irods_protocol.h"
#include "ferry/irods/irods_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto n = ferry::irods::ParseXml(in); n.ok()) {
    (*n)->Int("x");
    (*n)->All("value");
  }
  if (auto m = ferry::irods::DecodeMessage(in); m.ok()) {
    (void)ferry::irods::ParseXml(m->msg);
  }
  auto reader = ferry::irods::NewIrodsFraming()->NewReader();
  std::vector<std::string> records;
  (void)reader->Consume(in, &records);
  return 0;
}
