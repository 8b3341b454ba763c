#include "sentry/net/netlink/message.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sandbox::net::netlink {
namespace {

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string Msg(uint16_t type, uint16_t flags, uint32_t seq,
                const std::string& payload, uint32_t len_override = 0) {
  Header h{static_cast<uint32_t>(kHeaderLen + payload.size()), type, flags, seq,
           0};
  if (len_override) h.len = len_override;
  std::string s(reinterpret_cast<const char*>(&h), sizeof(h));
  s += payload;
  s.resize(Align(s.size()), '\0');
  return s;
}

TEST(SplitMessagesTest, WalksAlignedMessages) {
  std::string buf = Msg(18, 1, 7, "abc") + Msg(22, 1, 8, "");
  std::vector<Message> m = SplitMessages(Bytes(buf));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].hdr.seq, 7u);
  EXPECT_EQ(m[0].payload.size(), 3u);
  EXPECT_EQ(m[1].hdr.type, 22);
  EXPECT_EQ(m[1].payload.size(), 0u);
}

TEST(SplitMessagesTest, StopsAtBadLengths) {
  // nlmsg_len below the header, beyond the buffer, a short tail: the walk
  // stops there (netlink_rcv_skb).
  EXPECT_TRUE(SplitMessages(Bytes(Msg(18, 1, 1, "", 15))).empty());
  EXPECT_TRUE(SplitMessages(Bytes(Msg(18, 1, 1, "", 100))).empty());
  std::string buf = Msg(18, 1, 1, "") + std::string(15, '\x01');
  EXPECT_EQ(SplitMessages(Bytes(buf)).size(), 1u);
  std::string zeros = Msg(18, 1, 1, "") + std::string(120, '\0');
  EXPECT_EQ(SplitMessages(Bytes(zeros)).size(), 1u);
  EXPECT_TRUE(SplitMessages({}).empty());
}

TEST(SplitMessagesTest, UnalignedLastMessage) {
  // A last message whose aligned length passes the end still counts.
  std::string s = Msg(18, 1, 1, "ab");
  s.resize(kHeaderLen + 2);
  EXPECT_EQ(SplitMessages(Bytes(s)).size(), 1u);
}

TEST(ParseAttrsTest, AttributesAndLeftover) {
  Builder b;
  b.AttrU32(4, 65536);
  b.AttrString(3, "lo");
  size_t n = b.BeginNest(26, true);
  b.AttrU8(1, 9);
  b.EndNest(n);
  std::string s = b.Take() + "\x01\x02";
  ParsedAttrs p = ParseAttrs(Bytes(s));
  ASSERT_EQ(p.attrs.size(), 3u);
  EXPECT_EQ(p.attrs[0].U32(), 65536u);
  EXPECT_EQ(p.attrs[1].String(), "lo");
  EXPECT_EQ(p.attrs[1].data.size(), 3u);
  EXPECT_TRUE(p.attrs[2].nested);
  EXPECT_EQ(p.attrs[2].type, 26);
  EXPECT_EQ(ParseAttrs(p.attrs[2].data).attrs.size(), 1u);
  EXPECT_EQ(p.leftover, 2u);
}

TEST(ParseAttrsTest, BadAttributeLengthStops) {
  std::string s("\x03\x00\x01\x00", 4);  // nla_len 3 < 4
  ParsedAttrs p = ParseAttrs(Bytes(s));
  EXPECT_TRUE(p.attrs.empty());
  EXPECT_EQ(p.leftover, 4u);
  std::string big("\x40\x00\x01\x00xxxx", 8);  // beyond the buffer
  EXPECT_TRUE(ParseAttrs(Bytes(big)).attrs.empty());
}

TEST(ParseMessageAttrsTest, StrictRefusesLeftoverAndUnknownTypes) {
  Builder b;
  size_t at = b.Begin(18, 1, 1, 0);
  uint8_t hdr[16] = {};
  b.Append(hdr, sizeof(hdr));
  b.AttrU32(99, 1);
  b.End(at);
  std::string s = b.Take();
  std::vector<Message> m = SplitMessages(Bytes(s));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(ParseMessageAttrs(m[0], 16, 50, false).ok());
  EXPECT_EQ(ParseMessageAttrs(m[0], 16, 50, true).error(), kEINVAL);
  EXPECT_EQ(ParseMessageAttrs(m[0], 32, 50, false).error(), kEINVAL);
}

TEST(AttrTableTest, LastOfATypeWins) {
  Builder b;
  b.AttrU32(4, 1);
  b.AttrU32(4, 2);
  std::string s = b.Take();
  AttrTable t(ParseAttrs(Bytes(s)).attrs);
  ASSERT_TRUE(t.Has(4));
  EXPECT_EQ(t.Get(4)->U32(), 2u);
  EXPECT_FALSE(t.Has(5));
}

TEST(BuilderTest, LengthsAndPadding) {
  Builder b;
  size_t at = b.Begin(16, 2, 5, 77);
  b.AttrString(3, "lo");  // nla_len 7, padded to 8
  b.End(at);
  std::string s = b.Take();
  ASSERT_EQ(s.size(), 24u);
  Header h;
  memcpy(&h, s.data(), sizeof(h));
  EXPECT_EQ(h.len, 24u);
  EXPECT_EQ(h.pid, 77u);
  uint16_t nla_len;
  memcpy(&nla_len, s.data() + 16, 2);
  EXPECT_EQ(nla_len, 7);
}

TEST(ErrorMessageTest, AckIsCappedErrorEchoes) {
  std::string req = Msg(18, 5, 9, std::string(16, 'x'));
  Message m = SplitMessages(Bytes(req))[0];
  std::string ack = ErrorMessage(m, 0, 42, false, nullptr);
  ASSERT_EQ(ack.size(), 36u);
  Header h;
  memcpy(&h, ack.data(), sizeof(h));
  EXPECT_EQ(h.type, kNlmsgError);
  EXPECT_EQ(h.flags, kFCapped);
  EXPECT_EQ(h.seq, 9u);
  EXPECT_EQ(h.pid, 42u);
  std::string err = ErrorMessage(m, 19, 42, false, nullptr);
  ASSERT_EQ(err.size(), 52u);
  int32_t e;
  memcpy(&e, err.data() + 16, 4);
  EXPECT_EQ(e, -19);
  memcpy(&h, err.data(), sizeof(h));
  EXPECT_EQ(h.flags, 0);
  EXPECT_EQ(ErrorMessage(m, 19, 42, true, nullptr).size(), 36u);
  std::string ext = ErrorMessage(m, 22, 42, true, "bad");
  memcpy(&h, ext.data(), sizeof(h));
  EXPECT_EQ(h.flags, kFCapped | kFAckTlvs);
  EXPECT_EQ(ext.size(), 36u + 8u);
}

TEST(DoneMessageTest, CarriesTheError) {
  std::string d = DoneMessage(3, 4, kFMulti, 0, nullptr);
  ASSERT_EQ(d.size(), 20u);
  std::string e = DoneMessage(3, 4, kFMulti, ENOENT, "no table");
  int32_t v;
  memcpy(&v, e.data() + 16, 4);
  EXPECT_EQ(v, -ENOENT);
  Header h;
  memcpy(&h, e.data(), sizeof(h));
  EXPECT_EQ(h.flags, kFMulti | kFAckTlvs);
  EXPECT_EQ(h.len, e.size());
}

}  // namespace
}  // namespace sandbox::net::netlink
