// Field helpers shared by the codec files (not part of the API).
#ifndef GOFER_PROTOCOL_CODEC_INTERNAL_H_
#define GOFER_PROTOCOL_CODEC_INTERNAL_H_

#include <string>
#include <vector>

#include "gofer/protocol/messages.h"
#include "gofer/protocol/wire.h"

namespace gofer::codec_internal {

inline constexpr size_t kStatSize =
    8 + 8 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 3 * 12;
inline constexpr size_t kInodeSize = 8 + kStatSize;
static_assert(kInodeSize == kInodeWireSize);
// A Dirent's smallest encoding: ino, cookie, type, name length, 1-byte name.
inline constexpr size_t kMinDirentSize = 8 + 8 + 1 + 4 + 1;
// A DirentPlus's smallest encoding: a Dirent's and has_inode.
inline constexpr size_t kMinDirentPlusSize = kMinDirentSize + 1;

inline void PutTime(Writer& w, const Timespec& t) {
  w.I64(t.sec);
  w.U32(t.nsec);
}
inline Timespec GetTime(Reader& r) {
  Timespec t;
  t.sec = r.I64();
  t.nsec = r.U32();
  if (t.nsec >= 1000000000u) r.Fail();
  return t;
}

inline void PutStat(Writer& w, const Stat& s) {
  w.U64(s.dev);
  w.U64(s.ino);
  w.U32(s.mode);
  w.U32(s.nlink);
  w.U32(s.uid);
  w.U32(s.gid);
  w.U64(s.rdev);
  w.U64(s.size);
  w.U32(s.blksize);
  w.U64(s.blocks);
  PutTime(w, s.atime);
  PutTime(w, s.mtime);
  PutTime(w, s.ctime);
}
inline Stat GetStat(Reader& r) {
  Stat s;
  s.dev = r.U64();
  s.ino = r.U64();
  s.mode = r.U32();
  s.nlink = r.U32();
  s.uid = r.U32();
  s.gid = r.U32();
  s.rdev = r.U64();
  s.size = r.U64();
  s.blksize = r.U32();
  s.blocks = r.U64();
  s.atime = GetTime(r);
  s.mtime = GetTime(r);
  s.ctime = GetTime(r);
  return s;
}

inline void PutInode(Writer& w, const Inode& i) {
  w.U64(i.handle);
  PutStat(w, i.stat);
}
inline Inode GetInode(Reader& r) {
  Inode i;
  i.handle = r.U64();
  i.stat = GetStat(r);
  return i;
}

inline void PutNames(Writer& w, const std::vector<std::string>& names) {
  w.U32(static_cast<uint32_t>(names.size()));
  for (const auto& n : names) w.Str(n);
}
// Names may be empty on the wire; the server rejects invalid names with
// EINVAL/ENAMETOOLONG in its reply rather than failing the decode, so the
// decoder accepts up to kMaxNameLen + 1 bytes to let ENAMETOOLONG through.
inline std::vector<std::string> GetNames(Reader& r) {
  uint32_t n = r.Count(kMaxWalkNames, 4);
  std::vector<std::string> names;
  names.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    names.push_back(r.Str(kMaxNameLen + 1));
  }
  return names;
}

inline bool ValidWalkStatus(uint8_t s) { return s <= 2; }

}  // namespace gofer::codec_internal

#endif  // GOFER_PROTOCOL_CODEC_INTERNAL_H_
