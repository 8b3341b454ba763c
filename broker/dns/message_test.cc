#include "broker/dns/message.h"

#include <arpa/inet.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sandbox::broker::dns {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Raw message construction for hostile inputs.
class Raw {
 public:
  Raw& U8(uint8_t v) {
    b_.push_back(v);
    return *this;
  }
  Raw& U16(uint16_t v) { return U8(v >> 8).U8(v & 0xff); }
  Raw& U32(uint32_t v) { return U16(v >> 16).U16(v & 0xffff); }
  Raw& Header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an,
              uint16_t ns = 0, uint16_t ar = 0) {
    return U16(id).U16(flags).U16(qd).U16(an).U16(ns).U16(ar);
  }
  // Uncompressed labels, then the root (or nothing: `end` false).
  Raw& Name(std::vector<std::string> labels, bool end = true) {
    for (const std::string& l : labels) {
      U8(static_cast<uint8_t>(l.size()));
      b_.insert(b_.end(), l.begin(), l.end());
    }
    if (end) U8(0);
    return *this;
  }
  Raw& Ptr(uint16_t off) { return U16(0xc000 | off); }
  Raw& Bytes(std::vector<uint8_t> v) {
    b_.insert(b_.end(), v.begin(), v.end());
    return *this;
  }
  size_t size() const { return b_.size(); }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

AddressAnswer V4(const char* s, uint32_t ttl = 60) {
  AddressAnswer a;
  EXPECT_EQ(inet_pton(AF_INET, s, a.bytes.data()), 1);
  a.ttl = ttl;
  return a;
}

AddressAnswer V6(const char* s, uint32_t ttl = 60) {
  AddressAnswer a;
  a.v6 = true;
  EXPECT_EQ(inet_pton(AF_INET6, s, a.bytes.data()), 1);
  a.ttl = ttl;
  return a;
}

TEST(Query, BuildAndParseRoundTrip) {
  absl::StatusOr<std::vector<uint8_t>> q =
      BuildQuery(0x1234, "PyPI.org.", kTypeAAAA);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q, (Raw()
                     .Header(0x1234, 0x0100, 1, 0)
                     .Name({"PyPI", "org"})
                     .U16(kTypeAAAA)
                     .U16(kClassIN)
                     .bytes()));
  std::optional<ParsedQuery> p = ParseQuery(*q);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->error, Rcode::kNoError);
  EXPECT_EQ(p->header.id, 0x1234);
  EXPECT_TRUE(p->header.rd);
  ASSERT_TRUE(p->question.has_value());
  EXPECT_EQ(p->question->name, "PyPI.org");
  EXPECT_EQ(p->question->qtype, kTypeAAAA);
  EXPECT_EQ(p->question->qclass, kClassIN);
}

TEST(Query, DroppedWhenNoHeaderOrAResponse) {
  EXPECT_FALSE(ParseQuery({}).has_value());
  const std::vector<uint8_t> eleven(11, 0);
  EXPECT_FALSE(ParseQuery(eleven).has_value());
  Raw r;
  r.Header(1, 0x8000, 1, 0).Name({"a"}).U16(kTypeA).U16(kClassIN);
  EXPECT_FALSE(ParseQuery(r.bytes()).has_value());
}

Rcode QueryError(const Raw& r) {
  std::optional<ParsedQuery> p = ParseQuery(r.bytes());
  EXPECT_TRUE(p.has_value());
  return p ? p->error : Rcode::kNoError;
}

TEST(Query, MalformedQueriesAreFormErrWithTheirId) {
  // No question; two questions.
  EXPECT_EQ(QueryError(Raw().Header(7, 0, 0, 0)), Rcode::kFormErr);
  EXPECT_EQ(QueryError(Raw()
                           .Header(7, 0, 2, 0)
                           .Name({"a"})
                           .U16(1)
                           .U16(1)
                           .Name({"b"})
                           .U16(1)
                           .U16(1)),
            Rcode::kFormErr);
  // Truncated: in the label, before the root, in the type.
  Raw cut;
  cut.Header(7, 0, 1, 0).U8(5).Bytes({'a', 'b'});
  EXPECT_EQ(QueryError(cut), Rcode::kFormErr);
  EXPECT_EQ(QueryError(Raw().Header(7, 0, 1, 0).Name({"a"}, false)),
            Rcode::kFormErr);
  EXPECT_EQ(QueryError(Raw().Header(7, 0, 1, 0).Name({"a"}).U16(1).U8(0)),
            Rcode::kFormErr);
  // A pointer to itself, forward, a loop between two, 0x40/0x80 labels,
  // a pointer cut in half.
  EXPECT_EQ(QueryError(Raw().Header(7, 0, 1, 0).Ptr(12).U16(1).U16(1)),
            Rcode::kFormErr);
  EXPECT_EQ(
      QueryError(Raw().Header(7, 0, 1, 0).Ptr(14).Name({"a"}).U16(1).U16(1)),
      Rcode::kFormErr);
  EXPECT_EQ(
      QueryError(
          Raw().Header(7, 0, 1, 0).Name({"a"}, false).Ptr(12).U16(1).U16(1)),
      Rcode::kFormErr);
  EXPECT_EQ(QueryError(Raw().Header(7, 0, 1, 0).U8(0x41).U8(0).U16(1).U16(1)),
            Rcode::kFormErr);
  EXPECT_EQ(QueryError(Raw().Header(7, 0, 1, 0).U8(0x81).U8(0).U16(1).U16(1)),
            Rcode::kFormErr);
  EXPECT_EQ(QueryError(Raw().Header(7, 0, 1, 0).U8(0xc0)), Rcode::kFormErr);
  // Longer than 255 octets: 4 labels of 63 (256 with the root).
  const std::string l63(63, 'x');
  EXPECT_EQ(
      QueryError(
          Raw().Header(7, 0, 1, 0).Name({l63, l63, l63, l63}).U16(1).U16(1)),
      Rcode::kFormErr);
  // 255 exactly is fine: 1+63 three times (192) + 1+61 (62) + root (1).
  std::optional<ParsedQuery> ok =
      ParseQuery(Raw()
                     .Header(7, 0, 1, 0)
                     .Name({l63, l63, l63, std::string(61, 'y')})
                     .U16(1)
                     .U16(1)
                     .bytes());
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->error, Rcode::kNoError);
  EXPECT_EQ(ok->question->name.size(), 253u);

  std::optional<ParsedQuery> p =
      ParseQuery(Raw().Header(0xbeef, 0x0100, 0, 0).bytes());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->header.id, 0xbeef);
  EXPECT_FALSE(p->question.has_value());
}

TEST(Query, OtherOpcodesAreNotImp) {
  Raw r;
  r.Header(9, 2 << 11, 1, 0).Name({"a"}).U16(1).U16(1);  // STATUS
  std::optional<ParsedQuery> p = ParseQuery(r.bytes());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->error, Rcode::kNotImp);
  std::vector<uint8_t> resp = BuildResponse(*p, p->error, {}, kMaxUdpSize);
  absl::StatusOr<Response> back = ParseResponse(resp);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->header.rcode, 4);
  EXPECT_EQ(back->header.opcode, 2);
}

TEST(Query, LongPointerChainsAreRefused) {
  // With kMaxPointers links it decodes: an answer whose owner is reached
  // through a chain of 16 pointers (the chain lives in a skipped TXT
  // record's rdata).
  Raw ok;
  ok.Header(1, 0x8000, 0, 2);
  ok.Name({"a"});                         // owner of the TXT, offset 12
  ok.U16(kTypeTXT).U16(kClassIN).U32(1);  // offset 15
  const size_t rdlen_at = ok.size();
  ok.U16(0);
  const size_t rdata = ok.size();
  uint16_t prev = 12;
  for (int i = 0; i < kMaxPointers - 1; ++i) {
    const uint16_t here = static_cast<uint16_t>(ok.size());
    ok.Ptr(prev);
    prev = here;
  }
  const size_t rdlen = ok.size() - rdata;
  std::vector<uint8_t> bytes = ok.bytes();
  bytes[rdlen_at] = static_cast<uint8_t>(rdlen >> 8);
  bytes[rdlen_at + 1] = static_cast<uint8_t>(rdlen);
  Raw tail;
  tail.Ptr(prev).U16(kTypeA).U16(kClassIN).U32(1).U16(4).U32(0x7f000001);
  bytes.insert(bytes.end(), tail.bytes().begin(), tail.bytes().end());
  absl::StatusOr<Response> rr = ParseResponse(bytes);
  ASSERT_TRUE(rr.ok()) << rr.status();
  ASSERT_EQ(rr->answers.size(), 1u);
  EXPECT_EQ(rr->answers[0].name, "a");

  // One more link: refused.
  std::vector<uint8_t> more = ok.bytes();
  Raw extra;
  extra.Ptr(prev);
  more.insert(more.end(), extra.bytes().begin(), extra.bytes().end());
  const size_t rdlen2 = rdlen + 2;
  more[rdlen_at] = static_cast<uint8_t>(rdlen2 >> 8);
  more[rdlen_at + 1] = static_cast<uint8_t>(rdlen2);
  Raw tail2;
  tail2.Ptr(static_cast<uint16_t>(more.size() - 2))
      .U16(kTypeA)
      .U16(kClassIN)
      .U32(1)
      .U16(4)
      .U32(0x7f000001);
  more.insert(more.end(), tail2.bytes().begin(), tail2.bytes().end());
  rr = ParseResponse(more);
  EXPECT_FALSE(rr.ok());
}

TEST(Query, OddBytesAreEscaped) {
  Raw r;
  r.Header(1, 0, 1, 0).Name({"evil.pypi", "o g\\"}).U16(1).U16(1);
  std::optional<ParsedQuery> p = ParseQuery(r.bytes());
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->question.has_value());
  EXPECT_EQ(p->question->name, "evil\\046pypi.o\\032g\\092");
  // And encode back to the same bytes.
  std::vector<uint8_t> resp = BuildResponse(*p, Rcode::kNoError, {}, 512);
  std::vector<uint8_t> want_q(r.bytes().begin() + 12, r.bytes().end());
  std::vector<uint8_t> got_q(resp.begin() + 12, resp.end());
  EXPECT_EQ(got_q, want_q);
}

TEST(Response, AddressAnswersExactBytes) {
  absl::StatusOr<std::vector<uint8_t>> q =
      BuildQuery(0x4242, "Pypi.ORG", kTypeA);
  ASSERT_TRUE(q.ok());
  std::optional<ParsedQuery> p = ParseQuery(*q);
  ASSERT_TRUE(p.has_value());
  const AddressAnswer answers[] = {V4("151.101.0.223", 300),
                                   V4("151.101.64.223", 300)};
  std::vector<uint8_t> resp =
      BuildResponse(*p, Rcode::kNoError, answers, kMaxUdpSize);
  EXPECT_EQ(resp, (Raw()
                       .Header(0x4242, 0x8180, 1, 2)
                       .Name({"Pypi", "ORG"})
                       .U16(kTypeA)
                       .U16(kClassIN)
                       .Ptr(12)
                       .U16(kTypeA)
                       .U16(kClassIN)
                       .U32(300)
                       .U16(4)
                       .Bytes({151, 101, 0, 223})
                       .Ptr(12)
                       .U16(kTypeA)
                       .U16(kClassIN)
                       .U32(300)
                       .U16(4)
                       .Bytes({151, 101, 64, 223})
                       .bytes()));
  absl::StatusOr<Response> back = ParseResponse(resp);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(AnswersQuery(*back, 0x4242, "pypi.org.", kTypeA));
  EXPECT_FALSE(AnswersQuery(*back, 0x4243, "pypi.org", kTypeA));
  EXPECT_FALSE(AnswersQuery(*back, 0x4242, "pypi.org", kTypeAAAA));
  EXPECT_FALSE(AnswersQuery(*back, 0x4242, "pypi.com", kTypeA));
  Addresses a = ExtractAddresses(*back, "pypi.org", kTypeA);
  ASSERT_EQ(a.addresses.size(), 2u);
  EXPECT_EQ(a.ttl, 300u);
  EXPECT_EQ(a.addresses[1].bytes, answers[1].bytes);
}

TEST(Response, RcodesAndBits) {
  Raw r;
  r.Header(5, 0, 1, 0).Name({"x"}).U16(kTypeMX).U16(kClassIN);  // RD clear
  std::optional<ParsedQuery> p = ParseQuery(r.bytes());
  ASSERT_TRUE(p.has_value());
  for (Rcode rc : {Rcode::kNxDomain, Rcode::kRefused, Rcode::kServFail,
                   Rcode::kNoError, Rcode::kFormErr}) {
    const AddressAnswer ignored[] = {V4("1.2.3.4")};
    std::vector<uint8_t> resp = BuildResponse(
        *p, rc,
        rc == Rcode::kNoError ? std::span<const AddressAnswer>() : ignored,
        kMaxUdpSize);
    absl::StatusOr<Response> back = ParseResponse(resp);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->header.rcode, static_cast<uint8_t>(rc));
    EXPECT_EQ(back->header.id, 5);
    EXPECT_TRUE(back->header.qr);
    EXPECT_TRUE(back->header.ra);
    EXPECT_FALSE(back->header.rd);
    EXPECT_FALSE(back->header.aa);
    EXPECT_FALSE(back->header.tc);
    EXPECT_EQ(back->header.ancount, 0);
    ASSERT_TRUE(back->question.has_value());
    EXPECT_EQ(back->question->qtype, kTypeMX);
  }
  // FORMERR for a query without a question: header only.
  std::optional<ParsedQuery> none =
      ParseQuery(Raw().Header(6, 0x0100, 0, 0).bytes());
  ASSERT_TRUE(none.has_value());
  std::vector<uint8_t> resp = BuildResponse(*none, none->error, {}, 512);
  EXPECT_EQ(resp, Raw().Header(6, 0x8181, 0, 0).bytes());
}

TEST(Response, TruncatesToTheSizeAndSetsTc) {
  std::optional<ParsedQuery> p =
      ParseQuery(*BuildQuery(1, "many.example", kTypeA));
  ASSERT_TRUE(p.has_value());
  std::vector<AddressAnswer> answers;
  for (int i = 0; i < 100; ++i) {
    AddressAnswer a = V4("10.0.0.0");
    a.bytes[3] = static_cast<uint8_t>(i);
    answers.push_back(a);
  }
  std::vector<uint8_t> udp =
      BuildResponse(*p, Rcode::kNoError, answers, kMaxUdpSize);
  EXPECT_LE(udp.size(), kMaxUdpSize);
  absl::StatusOr<Response> back = ParseResponse(udp);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->header.tc);
  // 12 + 18 (question) + n * 16 <= 512.
  EXPECT_EQ(back->header.ancount, (512 - 12 - 18) / 16);

  std::vector<uint8_t> tcp =
      BuildResponse(*p, Rcode::kNoError, answers, kMaxTcpSize);
  back = ParseResponse(tcp);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->header.tc);
  EXPECT_EQ(back->header.ancount, 100);
  EXPECT_EQ(back->answers.size(), kMaxAnswers);

  // Too small even for the question: header only, TC.
  std::vector<uint8_t> tiny = BuildResponse(*p, Rcode::kNoError, answers, 20);
  EXPECT_EQ(tiny.size(), kHeaderSize);
  back = ParseResponse(tiny);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->header.tc);
  EXPECT_EQ(back->header.qdcount, 0);
}

TEST(Response, CnameChainsAndHostileExtras) {
  // pypi.org CNAME dualstack.python.map.fastly.net (suffix compressed
  // against itself), its A, and an A for an unrelated name.
  Raw r;
  r.Header(3, 0x8180, 1, 4);
  r.Name({"pypi", "org"}).U16(kTypeA).U16(kClassIN);  // name at 12
  // CNAME record.
  r.Ptr(12).U16(kTypeCNAME).U16(kClassIN).U32(100);
  const size_t rdlen_at = r.size();
  r.U16(0);
  const size_t target = r.size();
  r.Name({"dualstack", "python", "map", "fastly", "net"});
  std::vector<uint8_t> b = r.bytes();
  const size_t rdlen = b.size() - target;
  b[rdlen_at] = 0;
  b[rdlen_at + 1] = static_cast<uint8_t>(rdlen);
  Raw rest;
  rest.Ptr(static_cast<uint16_t>(target))
      .U16(kTypeA)
      .U16(kClassIN)
      .U32(30)
      .U16(4)
      .Bytes({151, 101, 0, 223});
  rest.Name({"evil", "example"})
      .U16(kTypeA)
      .U16(kClassIN)
      .U32(30)
      .U16(4)
      .Bytes({6, 6, 6, 6});
  // A record owned by the query name but of the other type: ignored for A.
  rest.Ptr(12).U16(kTypeAAAA).U16(kClassIN).U32(30).U16(16).Bytes(
      std::vector<uint8_t>(16, 1));
  b.insert(b.end(), rest.bytes().begin(), rest.bytes().end());

  absl::StatusOr<Response> back = ParseResponse(b);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->answers.size(), 4u);
  EXPECT_EQ(back->answers[0].cname, "dualstack.python.map.fastly.net");
  EXPECT_EQ(back->answers[1].name, "dualstack.python.map.fastly.net");
  Addresses a = ExtractAddresses(*back, "PYPI.org", kTypeA);
  ASSERT_EQ(a.addresses.size(), 1u);
  EXPECT_THAT(std::vector<uint8_t>(a.addresses[0].bytes.begin(),
                                   a.addresses[0].bytes.begin() + 4),
              ElementsAre(151, 101, 0, 223));
  EXPECT_EQ(a.ttl, 30u);
  Addresses six = ExtractAddresses(*back, "pypi.org", kTypeAAAA);
  EXPECT_EQ(six.addresses.size(), 1u);
  EXPECT_TRUE(ExtractAddresses(*back, "other.org", kTypeA).addresses.empty());
}

TEST(Response, CnameLoopsEnd) {
  Raw r;
  r.Header(3, 0x8180, 0, 2);
  r.Name({"a"}).U16(kTypeCNAME).U16(kClassIN).U32(1).U16(3).Name({"b"});
  r.Name({"b"}).U16(kTypeCNAME).U16(kClassIN).U32(1).U16(3).Name({"a"});
  absl::StatusOr<Response> back = ParseResponse(r.bytes());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(ExtractAddresses(*back, "a", kTypeA).addresses.empty());
}

TEST(Response, MalformedAndTruncated) {
  EXPECT_FALSE(ParseResponse(std::vector<uint8_t>(5, 0)).ok());
  // A query is no response.
  EXPECT_FALSE(ParseResponse(*BuildQuery(1, "a", kTypeA)).ok());
  // A with 5 bytes of rdata.
  Raw bad;
  bad.Header(1, 0x8000, 0, 1)
      .Name({"a"})
      .U16(kTypeA)
      .U16(kClassIN)
      .U32(1)
      .U16(5)
      .Bytes({1, 2, 3, 4, 5});
  absl::StatusOr<Response> r = ParseResponse(bad.bytes());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("5 bytes"));
  // CNAME whose name does not end at its rdata's end.
  Raw cn;
  cn.Header(1, 0x8000, 0, 1)
      .Name({"a"})
      .U16(kTypeCNAME)
      .U16(kClassIN)
      .U32(1)
      .U16(4)
      .Name({"b"})
      .U8(0);
  EXPECT_FALSE(ParseResponse(cn.bytes()).ok());
  // rdata past the end.
  Raw past;
  past.Header(1, 0x8000, 0, 1)
      .Name({"a"})
      .U16(kTypeA)
      .U16(kClassIN)
      .U32(1)
      .U16(4)
      .Bytes({1, 2});
  EXPECT_FALSE(ParseResponse(past.bytes()).ok());
  // The same with TC: what decoded is kept, the cut is no error.
  Raw tc;
  tc.Header(1, 0x8200, 0, 3)
      .Name({"a"})
      .U16(kTypeA)
      .U16(kClassIN)
      .U32(1)
      .U16(4)
      .Bytes({1, 2, 3, 4});
  tc.Name({"a"}).U16(kTypeA).U16(kClassIN).U32(1).U16(4).Bytes({1, 2});
  r = ParseResponse(tc.bytes());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->header.tc);
  EXPECT_EQ(r->answers.size(), 1u);
  // Other classes and types are skipped; a TTL with the top bit is 0.
  Raw mix;
  mix.Header(1, 0x8000, 0, 3);
  mix.Name({"a"}).U16(kTypeA).U16(3 /* CH */).U32(1).U16(4).U32(0);
  mix.Name({"a"}).U16(kTypeTXT).U16(kClassIN).U32(1).U16(2).U16(0x0141);
  mix.Name({"a"}).U16(kTypeA).U16(kClassIN).U32(0x80000001).U16(4).U32(1);
  r = ParseResponse(mix.bytes());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->answers.size(), 1u);
  EXPECT_EQ(r->answers[0].ttl, 0u);
  // Two questions.
  Raw two;
  two.Header(1, 0x8000, 2, 0)
      .Name({"a"})
      .U32(0x00010001)
      .Name({"b"})
      .U32(0x00010001);
  EXPECT_FALSE(ParseResponse(two.bytes()).ok());
}

TEST(Names, EncodeErrors) {
  EXPECT_THAT(*EncodeName("."), ElementsAre(0));
  EXPECT_THAT(*EncodeName(""), ElementsAre(0));
  EXPECT_THAT(*EncodeName("a.b."), ElementsAre(1, 'a', 1, 'b', 0));
  EXPECT_THAT(*EncodeName("a\\.b"), ElementsAre(3, 'a', '.', 'b', 0));
  EXPECT_THAT(*EncodeName("\\255"), ElementsAre(1, 255, 0));
  EXPECT_FALSE(EncodeName("a..b").ok());
  EXPECT_FALSE(EncodeName(".a").ok());
  EXPECT_FALSE(EncodeName("a..").ok());
  EXPECT_FALSE(EncodeName(std::string(64, 'a')).ok());
  EXPECT_TRUE(EncodeName(std::string(63, 'a')).ok());
  const std::string l63(63, 'x');
  EXPECT_FALSE(EncodeName(l63 + "." + l63 + "." + l63 + "." + l63).ok());
  EXPECT_TRUE(
      EncodeName(l63 + "." + l63 + "." + l63 + "." + std::string(61, 'y'))
          .ok());
  EXPECT_FALSE(EncodeName("a\\").ok());
  EXPECT_FALSE(EncodeName("a\\25").ok());
  EXPECT_FALSE(EncodeName("a\\256").ok());
  EXPECT_FALSE(BuildQuery(1, "a..b", kTypeA).ok());
  EXPECT_TRUE(NameEquals("PyPI.org.", "pypi.ORG"));
  EXPECT_FALSE(NameEquals("pypi.org", "pypi.or"));
}

TEST(Framing, TcpLengthPrefix) {
  const uint8_t m[] = {1, 2, 3};
  EXPECT_THAT(FrameTcp(m), ElementsAre(0, 3, 1, 2, 3));
}

}  // namespace
}  // namespace sandbox::broker::dns
