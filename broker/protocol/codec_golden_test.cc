// The wire format is frozen: a sample of every message type encodes to the
// bytes checked in as testdata/codec_golden.txt (produced by the codec as
// it was before its field lists), including what Encode cuts or
// normalises, and the decoder accepts and refuses the same mutations of
// them (every byte set to 0x00, 0x01, 0x02 and 0xFF).
//
// To regenerate (only for a deliberate protocol change, with a doc change):
//   bazel build //broker/protocol:codec_golden_test
//   CODEC_GOLDEN_WRITE=$PWD/broker/protocol/testdata/codec_golden.txt
//   bazel-bin/broker/protocol/codec_golden_test
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/protocol/codec.h"
#include "gtest/gtest.h"

namespace sandbox::broker {
namespace {

Endpoint V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port) {
  Endpoint e;
  e.ip.family = kFamilyInet;
  e.ip.bytes[0] = a;
  e.ip.bytes[1] = b;
  e.ip.bytes[2] = c;
  e.ip.bytes[3] = d;
  e.port = port;
  return e;
}

Endpoint V6(uint8_t k, uint16_t port) {
  Endpoint e;
  e.ip.family = kFamilyInet6;
  for (int i = 0; i < 16; ++i) e.ip.bytes[i] = static_cast<uint8_t>(0x20 + i);
  e.ip.bytes[15] = k;
  e.port = port;
  return e;
}

std::vector<std::pair<std::string, Message>> Samples() {
  std::vector<std::pair<std::string, Message>> out;
  Message c;
  c.type = Type::kConnect;
  c.id = 0x01020304;
  c.proto = Proto::kTcp;
  c.endpoint = V4(127, 0, 0, 1, 8080);
  out.emplace_back("connect_tcp", c);
  c.proto = Proto::kUdp;
  c.endpoint = V6(1, 53);
  c.name = "pypi.org";
  out.emplace_back("connect_udp_name", c);
  c.name = std::string(kMaxName + 10, 'a');  // Encode cuts it.
  out.emplace_back("connect_long_name", c);

  Message r;
  r.type = Type::kConnectReply;
  r.id = 7;
  r.error = 111;
  r.reason = "not in the egress policy";
  out.emplace_back("connect_reply_denied", r);
  r.in_progress = true;  // Encode drops it: only with a socket.
  out.emplace_back("connect_reply_denied_in_progress", r);
  r.error = 0;
  r.reason = "";
  r.local = V4(10, 0, 2, 15, 40000);
  out.emplace_back("connect_reply_in_progress", r);
  r.in_progress = false;
  r.local = V6(9, 1);
  out.emplace_back("connect_reply_ok", r);
  r.error = 13;
  r.reason = std::string(kMaxReason + 1, 'r');  // Encode cuts it.
  out.emplace_back("connect_reply_long_reason", r);

  Message q;
  q.type = Type::kResolve;
  q.id = 9;
  q.family = kFamilyInet6;
  q.name = "example.com";
  out.emplace_back("resolve", q);
  q.family = 0;
  q.name = "";
  out.emplace_back("resolve_any_empty", q);

  Message a;
  a.type = Type::kResolveReply;
  a.id = 9;
  a.ttl = 300;
  a.addresses = {V4(10, 0, 0, 1, 0).ip, V6(1, 0).ip};
  out.emplace_back("resolve_reply", a);
  a.addresses.clear();
  for (int i = 0; i < 40; ++i) {  // Encode cuts to kMaxAddresses.
    a.addresses.push_back(V4(1, 2, 3, static_cast<uint8_t>(i), 0).ip);
  }
  out.emplace_back("resolve_reply_many", a);
  a.addresses.clear();
  a.rcode = Rcode::kNxDomain;
  a.ttl = 0;
  out.emplace_back("resolve_reply_nx", a);

  Message p;
  p.type = Type::kAccepted;
  p.endpoint = V6(2, 40000);
  p.guest_port = 8888;
  out.emplace_back("accepted", p);
  p.type = Type::kUdpFlow;
  p.endpoint = V4(192, 168, 1, 2, 5353);
  p.guest_port = 53;
  out.emplace_back("udp_flow", p);
  return out;
}

std::string Hex(std::string_view b) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (char c : b) {
    s.push_back(kDigits[static_cast<uint8_t>(c) >> 4]);
    s.push_back(kDigits[static_cast<uint8_t>(c) & 15]);
  }
  return s;
}

char DecodeResult(std::string_view in) {
  Message m;
  if (!Decode(in, &m)) return '0';
  return Encode(m) == in ? '1' : '2';  // '2': accepted, not canonical.
}

// The decoder's answer to every mutation of b: each byte set to each of
// kValues in turn, then each strict prefix, then b with a byte appended.
std::string Mutations(const std::string& b) {
  static constexpr uint8_t kValues[] = {0x00, 0x01, 0x02, 0xFF};
  std::string res;
  for (size_t i = 0; i < b.size(); ++i) {
    for (uint8_t v : kValues) {
      std::string m = b;
      m[i] = static_cast<char>(v);
      res.push_back(DecodeResult(m));
    }
  }
  for (size_t n = 0; n < b.size(); ++n) {
    res.push_back(DecodeResult(std::string_view(b).substr(0, n)));
  }
  res.push_back(DecodeResult(b + "x"));
  return res;
}

TEST(CodecGolden, BytesAndDecodesMatchTheFrozenFormat) {
  auto samples = Samples();
  if (const char* path = std::getenv("CODEC_GOLDEN_WRITE")) {
    std::ofstream f(path);
    f << "# broker/protocol/codec_golden_test.cc: NAME HEX-BYTES DECODES\n";
    for (const auto& [name, m] : samples) {
      const std::string b = Encode(m);
      f << name << " " << Hex(b) << " " << Mutations(b) << "\n";
    }
    ASSERT_TRUE(f.good());
    return;
  }
  std::ifstream f("broker/protocol/testdata/codec_golden.txt");
  ASSERT_TRUE(f.is_open());
  std::string line;
  size_t i = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string name, hex, decodes;
    in >> name >> hex >> decodes;
    ASSERT_LT(i, samples.size()) << name;
    const auto& [sname, m] = samples[i++];
    ASSERT_EQ(sname, name);
    const std::string b = Encode(m);
    EXPECT_EQ(Hex(b), hex) << name;
    std::string got = Mutations(b);
    ASSERT_EQ(got.size(), decodes.size()) << name;
    size_t diff = 0;
    while (diff < got.size() && got[diff] == decodes[diff]) ++diff;
    EXPECT_EQ(diff, got.size())
        << name << ": mutation " << diff << " decodes as '" << got[diff]
        << "', frozen '" << decodes[diff] << "'";
  }
  EXPECT_EQ(i, samples.size());
}

}  // namespace
}  // namespace sandbox::broker
