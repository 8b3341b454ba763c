// Fuzz target for the broker message decoder: decoding never crashes or
// reads out of bounds (ASan under libFuzzer), and whatever decodes is
// canonical: encoding it again gives back exactly the input.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "broker/protocol/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  sandbox::broker::Message m;
  if (!sandbox::broker::Decode(in, &m)) return 0;
  if (sandbox::broker::Encode(m) != in) std::abort();
  (void)sandbox::broker::EndpointToString(m.endpoint);
  return 0;
}
