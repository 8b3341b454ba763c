// The wire format is frozen: a sample of every message type encodes to the
// bytes checked in as testdata/codec_golden.txt (produced by the codec as
// it was before its field lists), and the decoder accepts and refuses the
// same mutations of them (every byte set to 0x00, 0x01, 0x02 and 0xFF).
//
// To regenerate (only for a deliberate protocol change, with a doc change):
//   bazel build //gofer/protocol:codec_golden_test
//   CODEC_GOLDEN_WRITE=$PWD/gofer/protocol/testdata/codec_golden.txt
//   bazel-bin/gofer/protocol/codec_golden_test
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gofer/protocol/codec.h"
#include "gtest/gtest.h"

namespace gofer {
namespace {

struct Sample {
  std::string name;
  std::string bytes;
  // One character per mutation: what decoding it gives.
  std::function<char(std::string_view)> decode;
};

template <typename T>
char DecodeResult(std::string_view in) {
  T m;
  if (!Decode(in, &m)) return '0';
  return EncodeToString(m) == in ? '1' : '2';  // '2': accepted, not canonical.
}

char HeaderResult(std::string_view in) {
  Header h;
  switch (DecodeHeader(in, &h)) {
    case 0:
      return EncodeHeader(h) == in ? '1' : '2';
    case EPROTO:
      return 'p';
    case EPROTONOSUPPORT:
      return 'v';
    case EMSGSIZE:
      return 'm';
    case EINVAL:
      return 'i';
  }
  return '?';
}

Stat SampleStat(uint8_t k) {
  Stat s;
  s.dev = 0x0102030405060708ull + k;
  s.ino = 0x1112131415161718ull;
  s.mode = 0100644;
  s.nlink = 0x21222324;
  s.uid = 1000;
  s.gid = 1001;
  s.rdev = 0x3132333435363738ull;
  s.size = 1 << 20;
  s.blksize = 4096;
  s.blocks = 2048;
  s.atime = {-5, 999999999};
  s.mtime = {1700000000, 1};
  s.ctime = {0x4142434445464748ll, 123456789};
  return s;
}
Inode SampleInode(uint8_t k) {
  return {0x5152535455565758ull + k, SampleStat(k)};
}

std::vector<Sample> Samples() {
  std::vector<Sample> out;
  auto add = [&out](const std::string& name, const auto& msg) {
    using T = std::decay_t<decltype(msg)>;
    out.push_back({name, EncodeToString(msg), &DecodeResult<T>});
  };
  Header req;
  req.type = static_cast<uint16_t>(MessageType::kWalk);
  req.request_id = 0x1122334455667788;
  req.payload_len = 5;
  out.push_back({"header_request", EncodeHeader(req), &HeaderResult});
  Header rep = req;
  rep.flags = kFlagReply;
  rep.num_fds = 1;
  rep.error = ENOENT;
  out.push_back({"header_reply", EncodeHeader(rep), &HeaderResult});

  add("empty", Empty{});
  add("attach_req", AttachReq{});
  add("attach_resp", AttachResp{SampleInode(1), kMaxPayload, 1});
  add("walk_req", WalkReq{7, {"usr", "", std::string(kMaxNameLen + 1, 'n')}});
  add("walk_req_none", WalkReq{9, {}});
  WalkResp wr;
  wr.status = WalkStatus::kSymlink;
  wr.inodes = {SampleInode(2), SampleInode(3)};
  add("walk_resp_symlink", wr);
  wr.status = WalkStatus::kError;
  wr.error = ENOENT;
  wr.inodes = {SampleInode(4)};
  add("walk_resp_error", wr);
  add("walk_resp_empty", WalkResp{});
  add("walk_stat_req", WalkStatReq{3, {"a", "bc"}});
  WalkStatResp ws;
  ws.status = WalkStatus::kOk;
  ws.stats = {SampleStat(5), SampleStat(6)};
  add("walk_stat_resp", ws);
  ws.status = WalkStatus::kError;
  ws.error = EACCES;
  ws.stats = {};
  add("walk_stat_resp_error", ws);
  add("stat_req", StatReq{0x0102030405060708ull});
  add("stat_resp", StatResp{SampleStat(7)});
  add("open_req", OpenReq{9, 0x80002});
  add("create_req", CreateReq{1, "file", 2, 0644, 5, 6});
  add("inode_resp", InodeResp{SampleInode(8)});
  add("mkdir_req", MkdirReq{1, "d", 0755, kNoId, kNoId});
  add("mknod_req", MknodReq{2, "p", 010644, 7, 8});
  add("symlink_req", SymlinkReq{1, "l", "/etc/passwd", 0, 0});
  add("link_req", LinkReq{1, "h", 4});
  add("readlink_req", ReadlinkReq{4});
  add("readlink_resp", ReadlinkResp{"../target"});
  add("unlink_req", UnlinkReq{1, "x", 0x200});
  add("rename_req", RenameReq{1, "a", 2, "bb", 2});
  SetAttrReq sa;
  sa.handle = 3;
  sa.mask = kSetAllMask;
  sa.mode = 0600;
  sa.uid = 10;
  sa.gid = 11;
  sa.size = 0x0102030405ull;
  sa.atime = {-1, 2};
  sa.mtime = {5, 999999999};
  add("setattr_req", sa);
  add("getdents_req", GetdentsReq{1, 99, 100});
  add("getdents_resp_end", GetdentsResp{});
  GetdentsResp gd;
  gd.dirents = {{1, 2, 8, "a"}, {3, 4, 4, "dir"}};
  add("getdents_resp", gd);
  add("getdents_plus_req", GetdentsPlusReq{1, 99, 100});
  GetdentsPlusResp gp;
  gp.dirents = {{1, 2, 8, "a", 1, SampleInode(9)}, {3, 4, 4, "zz", 0, {}}};
  add("getdents_plus_resp", gp);
  add("getdents_plus_resp_end", GetdentsPlusResp{});
  StatfsResp sf{1, 2, 3, 4, 5, 6, 7, 255, 9, 0x0a0b0c0d0e0f1011ull};
  add("statfs_req", StatfsReq{5});
  add("statfs_resp", sf);
  add("fsync_req", FsyncReq{3});
  add("getxattr_req", GetXattrReq{3, "user.a", 10});
  add("getxattr_resp", GetXattrResp{3, "abc"});
  add("getxattr_resp_length", GetXattrResp{300, ""});
  add("setxattr_req", SetXattrReq{3, "user.a", "value", 1});
  add("listxattr_req", ListXattrReq{3, 100});
  add("listxattr_resp", ListXattrResp{7, std::string("user.a\0", 7)});
  add("removexattr_req", RemoveXattrReq{3, "user.a"});
  add("close_req", CloseReq{{1, 2, 0x0102030405060708ull}});
  add("close_req_none", CloseReq{});
  add("bind_socket_req", BindSocketReq{1, "sock", 1, 0755, 3, 4});
  add("connect_socket_req", ConnectSocketReq{6, 5});
  return out;
}

// The bytes in hex ("-" for none).
std::string Hex(std::string_view b) {
  static const char kDigits[] = "0123456789abcdef";
  if (b.empty()) return "-";
  std::string s;
  for (char c : b) {
    s.push_back(kDigits[static_cast<uint8_t>(c) >> 4]);
    s.push_back(kDigits[static_cast<uint8_t>(c) & 15]);
  }
  return s;
}

// The decoder's answer to every mutation of b: each byte set to each of
// kValues in turn, then each strict prefix, then b with a byte appended.
std::string Mutations(const Sample& s) {
  static constexpr uint8_t kValues[] = {0x00, 0x01, 0x02, 0xFF};
  std::string res;
  for (size_t i = 0; i < s.bytes.size(); ++i) {
    for (uint8_t v : kValues) {
      std::string m = s.bytes;
      m[i] = static_cast<char>(v);
      res.push_back(s.decode(m));
    }
  }
  for (size_t n = 0; n < s.bytes.size(); ++n) {
    res.push_back(s.decode(std::string_view(s.bytes).substr(0, n)));
  }
  res.push_back(s.decode(s.bytes + "x"));
  return res;
}

TEST(CodecGolden, BytesAndDecodesMatchTheFrozenFormat) {
  std::vector<Sample> samples = Samples();
  if (const char* path = std::getenv("CODEC_GOLDEN_WRITE")) {
    std::ofstream f(path);
    f << "# gofer/protocol/codec_golden_test.cc: NAME HEX-BYTES DECODES\n";
    for (const Sample& s : samples) {
      f << s.name << " " << Hex(s.bytes) << " " << Mutations(s) << "\n";
    }
    ASSERT_TRUE(f.good());
    return;
  }
  std::ifstream f("gofer/protocol/testdata/codec_golden.txt");
  ASSERT_TRUE(f.is_open());
  std::string line;
  size_t i = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string name, hex, decodes;
    in >> name >> hex >> decodes;
    ASSERT_LT(i, samples.size()) << name;
    const Sample& s = samples[i++];
    ASSERT_EQ(s.name, name);
    EXPECT_EQ(Hex(s.bytes), hex) << name;
    std::string got = Mutations(s);
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
}  // namespace gofer
