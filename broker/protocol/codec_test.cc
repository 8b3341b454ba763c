#include "broker/protocol/codec.h"

#include <string>

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

Endpoint V6Loopback(uint16_t port) {
  Endpoint e;
  e.ip.family = kFamilyInet6;
  e.ip.bytes[15] = 1;
  e.port = port;
  return e;
}

void ExpectRoundTrip(const Message& m) {
  const std::string b = Encode(m);
  Message d;
  ASSERT_TRUE(Decode(b, &d)) << static_cast<int>(m.type);
  EXPECT_EQ(Encode(d), b);
  EXPECT_EQ(d.type, m.type);
  EXPECT_EQ(d.id, m.id);
}

TEST(Codec, EveryTypeRoundTrips) {
  Message c;
  c.type = Type::kConnect;
  c.id = 7;
  c.proto = Proto::kUdp;
  c.endpoint = V4(127, 0, 0, 1, 8080);
  c.name = "pypi.org";
  ExpectRoundTrip(c);
  Message d;
  ASSERT_TRUE(Decode(Encode(c), &d));
  EXPECT_EQ(d.proto, Proto::kUdp);
  EXPECT_EQ(d.endpoint, c.endpoint);
  EXPECT_EQ(d.name, "pypi.org");

  Message r;
  r.type = Type::kConnectReply;
  r.id = 7;
  r.error = 111;
  r.reason = "not in the egress policy";
  ExpectRoundTrip(r);
  r.error = 0;
  r.in_progress = true;
  ExpectRoundTrip(r);

  Message q;
  q.type = Type::kResolve;
  q.id = 9;
  q.family = kFamilyInet6;
  q.name = "example.com";
  ExpectRoundTrip(q);

  Message a;
  a.type = Type::kResolveReply;
  a.id = 9;
  a.ttl = 300;
  a.addresses = {V4(10, 0, 0, 1, 0).ip, V6Loopback(0).ip};
  ExpectRoundTrip(a);
  ASSERT_TRUE(Decode(Encode(a), &d));
  ASSERT_EQ(d.addresses.size(), 2u);
  EXPECT_EQ(d.addresses[1], V6Loopback(0).ip);

  Message p;
  p.type = Type::kAccepted;
  p.endpoint = V6Loopback(40000);
  p.guest_port = 8888;
  ExpectRoundTrip(p);
  p.type = Type::kUdpFlow;
  ExpectRoundTrip(p);
}

TEST(Codec, RejectsBadHeaders) {
  Message c;
  c.type = Type::kConnect;
  c.id = 1;
  c.endpoint = V4(127, 0, 0, 1, 1);
  const std::string good = Encode(c);
  Message d;
  ASSERT_TRUE(Decode(good, &d));
  std::string b = good;
  b[0] = 2;  // version
  EXPECT_FALSE(Decode(b, &d));
  b = good;
  b[1] = 0;  // type
  EXPECT_FALSE(Decode(b, &d));
  b[1] = kMaxType + 1;
  EXPECT_FALSE(Decode(b, &d));
  b = good;
  b[2] = 1;  // flags
  EXPECT_FALSE(Decode(b, &d));
  EXPECT_FALSE(Decode(good + "x", &d));  // trailing byte
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(Decode(good.substr(0, n), &d)) << n;
  }
  // A request needs an id; an unsolicited message has none.
  c.id = 0;
  EXPECT_FALSE(Decode(Encode(c), &d));
  Message p;
  p.type = Type::kAccepted;
  p.id = 3;
  p.guest_port = 80;
  EXPECT_FALSE(Decode(Encode(p), &d));
  p.id = 0;
  p.guest_port = 0;
  EXPECT_FALSE(Decode(Encode(p), &d));
}

TEST(Codec, RejectsBadFields) {
  Message c;
  c.type = Type::kConnect;
  c.id = 1;
  c.endpoint = V4(127, 0, 0, 1, 1);
  std::string b = Encode(c);
  Message d;
  b[8] = 3;  // proto
  EXPECT_FALSE(Decode(b, &d));
  b = Encode(c);
  b[9] = 1;  // family
  EXPECT_FALSE(Decode(b, &d));
  b = Encode(c);
  b[10 + 5] = 1;  // an IPv4 address with a nonzero byte past its four
  EXPECT_FALSE(Decode(b, &d));

  // A name longer than kMaxName: cut by Encode, refused by Decode.
  c.name = std::string(kMaxName + 10, 'a');
  ASSERT_TRUE(Decode(Encode(c), &d));
  EXPECT_EQ(d.name.size(), kMaxName);
  std::string raw = Encode(c);
  raw.resize(raw.size() - kMaxName - 4);
  raw += std::string("\xff\x00\x00\x00", 4) + std::string(255, 'a');
  EXPECT_FALSE(Decode(raw, &d));

  // A reply with a hostile address count.
  Message a;
  a.type = Type::kResolveReply;
  a.id = 2;
  std::string ra = Encode(a);
  ra[13] = 0x7f;  // count 0x7f000000... in the u32 at 13..16
  ra[16] = 0x7f;
  EXPECT_FALSE(Decode(ra, &d));
  // Addresses only with NOERROR.
  a.rcode = Rcode::kNxDomain;
  a.addresses = {V4(1, 2, 3, 4, 0).ip};
  EXPECT_FALSE(Decode(Encode(a), &d));
  // errno out of range, in_progress with an error.
  Message r;
  r.type = Type::kConnectReply;
  r.id = 1;
  r.error = -1;
  EXPECT_FALSE(Decode(Encode(r), &d));
  r.error = 111;
  std::string rr = Encode(r);
  rr[12] = 1;
  EXPECT_FALSE(Decode(rr, &d));
}

TEST(Codec, Text) {
  EXPECT_EQ(EndpointToString(V4(127, 0, 0, 1, 80)), "127.0.0.1:80");
  EXPECT_EQ(EndpointToString(V6Loopback(443)), "[::1]:443");
}

}  // namespace
}  // namespace sandbox::broker
