#include "gofer/protocol/codec.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace gofer {
namespace {

template <typename T>
T RoundTrip(const T& in) {
  std::string bytes = EncodeToString(in);
  T out;
  EXPECT_TRUE(Decode(bytes, &out));
  EXPECT_EQ(EncodeToString(out), bytes);
  // Every strict prefix and any trailing byte are rejected.
  for (size_t n = 0; n < bytes.size(); ++n) {
    T part;
    EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, n), &part)) << n;
  }
  T extra;
  EXPECT_FALSE(Decode(bytes + "x", &extra));
  return out;
}

Stat SampleStat() {
  Stat s;
  s.dev = 0x0102030405060708;
  s.ino = 42;
  s.mode = 0100644;
  s.nlink = 2;
  s.uid = 1000;
  s.gid = 1001;
  s.size = 1 << 20;
  s.blksize = 4096;
  s.blocks = 2048;
  s.atime = {-5, 999999999};
  s.mtime = {1700000000, 1};
  return s;
}

TEST(Codec, HeaderIsLittleEndianAndFixedSize) {
  Header h;
  h.type = static_cast<uint16_t>(MessageType::kWalk);
  h.request_id = 0x1122334455667788;
  h.payload_len = 5;
  std::string b = EncodeHeader(h);
  ASSERT_EQ(b.size(), kHeaderSize);
  EXPECT_EQ(b.substr(0, 4), "GOFR");
  EXPECT_EQ(static_cast<uint8_t>(b[16]), 0x88);  // request_id, low byte first.
  Header out;
  EXPECT_EQ(DecodeHeader(b, &out), 0);
  EXPECT_EQ(out.request_id, h.request_id);
  EXPECT_EQ(out.payload_len, 5u);
}

TEST(Codec, HeaderErrors) {
  Header out;
  Header h;
  h.magic = 0x12345678;
  EXPECT_EQ(DecodeHeader(EncodeHeader(h), &out), EPROTO);
  h = Header();
  h.reserved = 1;
  EXPECT_EQ(DecodeHeader(EncodeHeader(h), &out), EPROTO);
  h = Header();
  h.version = 2;
  EXPECT_EQ(DecodeHeader(EncodeHeader(h), &out), EPROTONOSUPPORT);
  h = Header();
  h.payload_len = kMaxPayload + 1;
  EXPECT_EQ(DecodeHeader(EncodeHeader(h), &out), EMSGSIZE);
  h = Header();
  h.flags = 2;
  EXPECT_EQ(DecodeHeader(EncodeHeader(h), &out), EINVAL);
  h = Header();
  h.num_fds = 2;
  EXPECT_EQ(DecodeHeader(EncodeHeader(h), &out), EINVAL);
  EXPECT_EQ(DecodeHeader("short", &out), EPROTO);
}

TEST(Codec, RoundTripsEveryMessage) {
  WalkReq walk{7, {"usr", "lib", std::string(kMaxNameLen, 'n')}};
  EXPECT_EQ(RoundTrip(walk).names, walk.names);
  WalkResp wr;
  wr.status = WalkStatus::kSymlink;
  wr.inodes = {{3, SampleStat()}, {4, SampleStat()}};
  WalkResp wr2 = RoundTrip(wr);
  EXPECT_EQ(wr2.inodes[1].handle, 4u);
  EXPECT_EQ(wr2.inodes[0].stat.atime.sec, -5);
  EXPECT_EQ(wr2.inodes[0].stat.dev, SampleStat().dev);
  WalkStatResp ws;
  ws.status = WalkStatus::kError;
  ws.error = ENOENT;
  ws.stats = {SampleStat()};
  EXPECT_EQ(RoundTrip(ws).error, static_cast<uint32_t>(ENOENT));
  RoundTrip(AttachResp{{1, SampleStat()}, kMaxPayload, 1});
  RoundTrip(StatReq{9});
  RoundTrip(StatResp{SampleStat()});
  RoundTrip(OpenReq{9, 2});
  EXPECT_EQ(RoundTrip(CreateReq{1, "f", 2, 0644, 5, 6}).gid, 6u);
  RoundTrip(InodeResp{{8, SampleStat()}});
  RoundTrip(MkdirReq{1, "d", 0755, kNoId, kNoId});
  RoundTrip(MknodReq{1, "p", 010644, 0, 0});
  EXPECT_EQ(RoundTrip(SymlinkReq{1, "l", "/etc/passwd", 0, 0}).target,
            "/etc/passwd");
  RoundTrip(LinkReq{1, "h", 4});
  RoundTrip(ReadlinkReq{4});
  RoundTrip(ReadlinkResp{std::string(kMaxPathLen, 't')});
  RoundTrip(UnlinkReq{1, "x", 0x200});
  EXPECT_EQ(RoundTrip(RenameReq{1, "a", 2, "b", 2}).new_name, "b");
  SetAttrReq sa;
  sa.handle = 3;
  sa.mask = kSetAllMask;
  sa.size = 1234;
  sa.mtime = {5, 6};
  EXPECT_EQ(RoundTrip(sa).mtime.nsec, 6u);
  RoundTrip(GetdentsReq{1, 99, 100});
  GetdentsResp gd;
  gd.dirents = {{1, 2, 8, "a"}, {3, 4, 4, std::string(kMaxNameLen, 'z')}};
  EXPECT_EQ(RoundTrip(gd).dirents[1].next_cookie, 4u);
  RoundTrip(GetdentsPlusReq{1, 99, 100});
  GetdentsPlusResp gp;
  gp.dirents = {{1, 2, 8, "a", 1, {77, SampleStat()}},
                {3, 4, 4, std::string(kMaxNameLen, 'z'), 0, {}}};
  GetdentsPlusResp gpo = RoundTrip(gp);
  EXPECT_EQ(gpo.dirents[0].inode.handle, 77u);
  EXPECT_EQ(gpo.dirents[1].has_inode, 0);
  EXPECT_EQ(gpo.dirents[1].inode.handle, 0u);
  StatfsResp sf;
  sf.namelen = 255;
  sf.flags = 1;
  EXPECT_EQ(RoundTrip(sf).namelen, 255u);
  RoundTrip(FsyncReq{3});
  RoundTrip(GetXattrReq{3, "user.a", 10});
  RoundTrip(GetXattrResp{3, "abc"});
  RoundTrip(SetXattrReq{3, "user.a", std::string(kMaxXattrValueLen, 'v'), 1});
  RoundTrip(ListXattrReq{3, 100});
  RoundTrip(ListXattrResp{7, std::string("user.a\0", 7)});
  RoundTrip(RemoveXattrReq{3, "user.a"});
  RoundTrip(CloseReq{{1, 2, 3}});
  std::string empty;
  AttachReq a;
  EXPECT_TRUE(Decode(empty, &a));
}

TEST(Codec, RejectsOverlongFields) {
  // Names: kMaxNameLen + 1 decodes (the server answers ENAMETOOLONG), more
  // does not.
  WalkReq ok{1, {std::string(kMaxNameLen + 1, 'a')}};
  WalkReq out;
  EXPECT_TRUE(Decode(EncodeToString(ok), &out));
  WalkReq bad{1, {std::string(kMaxNameLen + 2, 'a')}};
  EXPECT_FALSE(Decode(EncodeToString(bad), &out));
  WalkReq many;
  many.names.assign(kMaxWalkNames + 1, "a");
  EXPECT_FALSE(Decode(EncodeToString(many), &out));
  SymlinkReq sl{1, "l", std::string(kMaxPathLen + 2, 't'), 0, 0};
  SymlinkReq slo;
  EXPECT_FALSE(Decode(EncodeToString(sl), &slo));
  GetdentsResp gd;
  gd.dirents = {{1, 2, 8, ""}};  // Dirents never have empty names.
  GetdentsResp gdo;
  EXPECT_FALSE(Decode(EncodeToString(gd), &gdo));
  // GetdentsPlus: has_inode is 0 or 1, the inode present iff 1, names
  // non-empty and bounded, at most kMaxDirentsPlus entries.
  GetdentsPlusResp gp;
  gp.dirents = {{1, 2, 8, "a", 1, {77, {}}}};
  std::string enc = EncodeToString(gp);
  GetdentsPlusResp gpo;
  ASSERT_TRUE(Decode(enc, &gpo));
  std::string flag2 = enc;
  flag2[4 + 8 + 8 + 1 + 4 + 1] = 2;
  EXPECT_FALSE(Decode(flag2, &gpo));
  std::string no_inode = enc;
  no_inode[4 + 8 + 8 + 1 + 4 + 1] = 0;  // the inode's bytes now trail
  EXPECT_FALSE(Decode(no_inode, &gpo));
  EXPECT_FALSE(Decode(enc.substr(0, enc.size() - 1), &gpo));
  gp.dirents = {{1, 2, 8, std::string(kMaxNameLen + 1, 'n'), 0, {}}};
  EXPECT_FALSE(Decode(EncodeToString(gp), &gpo));
  gp.dirents = {{1, 2, 8, "", 0, {}}};
  EXPECT_FALSE(Decode(EncodeToString(gp), &gpo));
  gp.dirents.assign(kMaxDirentsPlus + 1, {1, 2, 8, "a", 0, {}});
  EXPECT_FALSE(Decode(EncodeToString(gp), &gpo));
  gp.dirents.resize(kMaxDirentsPlus);
  EXPECT_TRUE(Decode(EncodeToString(gp), &gpo));
  GetXattrResp gx{4, "abc"};  // Value and its length disagree.
  GetXattrResp gxo;
  EXPECT_FALSE(Decode(EncodeToString(gx), &gxo));
}

TEST(Codec, HostileCountsDoNotAllocate) {
  // A count of 2^32-1 names with 8 bytes left must fail at once.
  Writer w;
  w.U64(1);
  w.U32(0xFFFFFFFF);
  w.U64(0);
  WalkReq out;
  EXPECT_FALSE(Decode(w.data(), &out));
  Writer c;
  c.U32(kMaxCloseHandles);  // Within the bound but not backed by bytes.
  CloseReq co;
  EXPECT_FALSE(Decode(c.data(), &co));
  Writer s;
  s.U32(0xFFFFFFF0);  // A string length past the end.
  ReadlinkResp ro;
  EXPECT_FALSE(Decode(s.data(), &ro));
}

TEST(Codec, RejectsBadEnumsAndTimes) {
  WalkResp wr;
  wr.status = static_cast<WalkStatus>(3);
  WalkResp out;
  EXPECT_FALSE(Decode(EncodeToString(wr), &out));
  wr.status = WalkStatus::kError;  // kError needs an errno, others none.
  EXPECT_FALSE(Decode(EncodeToString(wr), &out));
  wr.status = WalkStatus::kOk;
  wr.error = ENOENT;
  EXPECT_FALSE(Decode(EncodeToString(wr), &out));
  SetAttrReq sa;
  sa.atime.nsec = 1000000000;
  SetAttrReq so;
  EXPECT_FALSE(Decode(EncodeToString(sa), &so));
  AttachResp ar;
  ar.read_only = 2;
  AttachResp aro;
  EXPECT_FALSE(Decode(EncodeToString(ar), &aro));
}

}  // namespace
}  // namespace gofer
