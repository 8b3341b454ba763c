#include "gofer/protocol/codec.h"

#include <cerrno>

namespace gofer {
namespace {

constexpr size_t kStatSize = 8 + 8 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 3 * 12;
constexpr size_t kInodeSize = 8 + kStatSize;
// A Dirent's smallest encoding: ino, cookie, type, name length, 1-byte name.
constexpr size_t kMinDirentSize = 8 + 8 + 1 + 4 + 1;

void PutTime(Writer& w, const Timespec& t) {
  w.I64(t.sec);
  w.U32(t.nsec);
}
Timespec GetTime(Reader& r) {
  Timespec t;
  t.sec = r.I64();
  t.nsec = r.U32();
  if (t.nsec >= 1000000000u) r.Fail();
  return t;
}

void PutStat(Writer& w, const Stat& s) {
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
Stat GetStat(Reader& r) {
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

void PutInode(Writer& w, const Inode& i) {
  w.U64(i.handle);
  PutStat(w, i.stat);
}
Inode GetInode(Reader& r) {
  Inode i;
  i.handle = r.U64();
  i.stat = GetStat(r);
  return i;
}

void PutNames(Writer& w, const std::vector<std::string>& names) {
  w.U32(static_cast<uint32_t>(names.size()));
  for (const auto& n : names) w.Str(n);
}
// Names may be empty on the wire; the server rejects invalid names with
// EINVAL/ENAMETOOLONG in its reply rather than failing the decode, so the
// decoder accepts up to kMaxNameLen + 1 bytes to let ENAMETOOLONG through.
std::vector<std::string> GetNames(Reader& r) {
  uint32_t n = r.Count(kMaxWalkNames, 4);
  std::vector<std::string> names;
  names.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    names.push_back(r.Str(kMaxNameLen + 1));
  }
  return names;
}

bool ValidWalkStatus(uint8_t s) { return s <= 2; }

}  // namespace

const char* MessageTypeName(MessageType t) {
  switch (t) {
    case MessageType::kAttach:
      return "Attach";
    case MessageType::kWalk:
      return "Walk";
    case MessageType::kWalkStat:
      return "WalkStat";
    case MessageType::kStat:
      return "Stat";
    case MessageType::kOpen:
      return "Open";
    case MessageType::kCreate:
      return "Create";
    case MessageType::kMkdir:
      return "Mkdir";
    case MessageType::kMknod:
      return "Mknod";
    case MessageType::kSymlink:
      return "Symlink";
    case MessageType::kLink:
      return "Link";
    case MessageType::kReadlink:
      return "Readlink";
    case MessageType::kUnlink:
      return "Unlink";
    case MessageType::kRename:
      return "Rename";
    case MessageType::kSetAttr:
      return "SetAttr";
    case MessageType::kGetdents:
      return "Getdents";
    case MessageType::kStatfs:
      return "Statfs";
    case MessageType::kFsync:
      return "Fsync";
    case MessageType::kGetXattr:
      return "GetXattr";
    case MessageType::kSetXattr:
      return "SetXattr";
    case MessageType::kListXattr:
      return "ListXattr";
    case MessageType::kRemoveXattr:
      return "RemoveXattr";
    case MessageType::kClose:
      return "Close";
  }
  return "Unknown";
}

std::string EncodeHeader(const Header& h) {
  Writer w;
  w.U32(h.magic);
  w.U16(h.version);
  w.U16(h.type);
  w.U16(h.flags);
  w.U16(h.num_fds);
  w.U32(h.error);
  w.U64(h.request_id);
  w.U32(h.payload_len);
  w.U32(h.reserved);
  return w.Take();
}

int DecodeHeader(std::string_view bytes, Header* h) {
  if (bytes.size() != kHeaderSize) return EPROTO;
  Reader r(bytes);
  h->magic = r.U32();
  h->version = r.U16();
  h->type = r.U16();
  h->flags = r.U16();
  h->num_fds = r.U16();
  h->error = r.U32();
  h->request_id = r.U64();
  h->payload_len = r.U32();
  h->reserved = r.U32();
  if (!r.Done() || h->magic != kMagic || h->reserved != 0) return EPROTO;
  if (h->version != kVersion) return EPROTONOSUPPORT;
  if (h->payload_len > kMaxPayload) return EMSGSIZE;
  if ((h->flags & ~kFlagReply) != 0) return EINVAL;
  if (h->num_fds > kMaxFdsPerMessage) return EINVAL;
  return 0;
}

// ---- Attach ----
void Encode(Writer&, const AttachReq&) {}
bool Decode(std::string_view in, AttachReq*) { return in.empty(); }
void Encode(Writer& w, const AttachResp& m) {
  PutInode(w, m.root);
  w.U32(m.max_payload);
  w.U8(m.read_only);
}
bool Decode(std::string_view in, AttachResp* m) {
  Reader r(in);
  m->root = GetInode(r);
  m->max_payload = r.U32();
  m->read_only = r.U8();
  return r.Done() && m->read_only <= 1;
}

// ---- Walk / WalkStat ----
void Encode(Writer& w, const WalkReq& m) {
  w.U64(m.dir);
  PutNames(w, m.names);
}
bool Decode(std::string_view in, WalkReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->names = GetNames(r);
  return r.Done();
}
void Encode(Writer& w, const WalkResp& m) {
  w.U8(static_cast<uint8_t>(m.status));
  w.U32(m.error);
  w.U32(static_cast<uint32_t>(m.inodes.size()));
  for (const auto& i : m.inodes) PutInode(w, i);
}
bool Decode(std::string_view in, WalkResp* m) {
  Reader r(in);
  uint8_t status = r.U8();
  m->error = r.U32();
  uint32_t n = r.Count(kMaxWalkNames, kInodeSize);
  m->inodes.clear();
  m->inodes.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) m->inodes.push_back(GetInode(r));
  m->status = static_cast<WalkStatus>(status);
  return r.Done() && ValidWalkStatus(status) &&
         (m->status == WalkStatus::kError) == (m->error != 0);
}
void Encode(Writer& w, const WalkStatReq& m) {
  w.U64(m.dir);
  PutNames(w, m.names);
}
bool Decode(std::string_view in, WalkStatReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->names = GetNames(r);
  return r.Done();
}
void Encode(Writer& w, const WalkStatResp& m) {
  w.U8(static_cast<uint8_t>(m.status));
  w.U32(m.error);
  w.U32(static_cast<uint32_t>(m.stats.size()));
  for (const auto& s : m.stats) PutStat(w, s);
}
bool Decode(std::string_view in, WalkStatResp* m) {
  Reader r(in);
  uint8_t status = r.U8();
  m->error = r.U32();
  uint32_t n = r.Count(kMaxWalkNames, kStatSize);
  m->stats.clear();
  m->stats.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) m->stats.push_back(GetStat(r));
  m->status = static_cast<WalkStatus>(status);
  return r.Done() && ValidWalkStatus(status) &&
         (m->status == WalkStatus::kError) == (m->error != 0);
}

// ---- Single-handle requests ----
#define HANDLE_ONLY(T, field)                            \
  void Encode(Writer& w, const T& m) { w.U64(m.field); } \
  bool Decode(std::string_view in, T* m) {               \
    Reader r(in);                                        \
    m->field = r.U64();                                  \
    return r.Done();                                     \
  }
HANDLE_ONLY(StatReq, handle)
HANDLE_ONLY(ReadlinkReq, handle)
HANDLE_ONLY(StatfsReq, handle)
HANDLE_ONLY(FsyncReq, handle)
#undef HANDLE_ONLY

void Encode(Writer& w, const StatResp& m) { PutStat(w, m.stat); }
bool Decode(std::string_view in, StatResp* m) {
  Reader r(in);
  m->stat = GetStat(r);
  return r.Done();
}

void Encode(Writer& w, const OpenReq& m) {
  w.U64(m.handle);
  w.U32(m.flags);
}
bool Decode(std::string_view in, OpenReq* m) {
  Reader r(in);
  m->handle = r.U64();
  m->flags = r.U32();
  return r.Done();
}

// ---- Creation ----
void Encode(Writer& w, const CreateReq& m) {
  w.U64(m.dir);
  w.Str(m.name);
  w.U32(m.flags);
  w.U32(m.mode);
  w.U32(m.uid);
  w.U32(m.gid);
}
bool Decode(std::string_view in, CreateReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->name = r.Str(kMaxNameLen + 1);
  m->flags = r.U32();
  m->mode = r.U32();
  m->uid = r.U32();
  m->gid = r.U32();
  return r.Done();
}
void Encode(Writer& w, const InodeResp& m) { PutInode(w, m.inode); }
bool Decode(std::string_view in, InodeResp* m) {
  Reader r(in);
  m->inode = GetInode(r);
  return r.Done();
}
#define DIR_NAME_MODE(T)                   \
  void Encode(Writer& w, const T& m) {     \
    w.U64(m.dir);                          \
    w.Str(m.name);                         \
    w.U32(m.mode);                         \
    w.U32(m.uid);                          \
    w.U32(m.gid);                          \
  }                                        \
  bool Decode(std::string_view in, T* m) { \
    Reader r(in);                          \
    m->dir = r.U64();                      \
    m->name = r.Str(kMaxNameLen + 1);      \
    m->mode = r.U32();                     \
    m->uid = r.U32();                      \
    m->gid = r.U32();                      \
    return r.Done();                       \
  }
DIR_NAME_MODE(MkdirReq)
DIR_NAME_MODE(MknodReq)
#undef DIR_NAME_MODE

void Encode(Writer& w, const SymlinkReq& m) {
  w.U64(m.dir);
  w.Str(m.name);
  w.Str(m.target);
  w.U32(m.uid);
  w.U32(m.gid);
}
bool Decode(std::string_view in, SymlinkReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->name = r.Str(kMaxNameLen + 1);
  m->target = r.Str(kMaxPathLen + 1);
  m->uid = r.U32();
  m->gid = r.U32();
  return r.Done();
}

void Encode(Writer& w, const LinkReq& m) {
  w.U64(m.dir);
  w.Str(m.name);
  w.U64(m.target);
}
bool Decode(std::string_view in, LinkReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->name = r.Str(kMaxNameLen + 1);
  m->target = r.U64();
  return r.Done();
}

void Encode(Writer& w, const ReadlinkResp& m) { w.Str(m.target); }
bool Decode(std::string_view in, ReadlinkResp* m) {
  Reader r(in);
  m->target = r.Str(kMaxPathLen + 1);
  return r.Done();
}

// ---- Removal and rename ----
void Encode(Writer& w, const UnlinkReq& m) {
  w.U64(m.dir);
  w.Str(m.name);
  w.U32(m.flags);
}
bool Decode(std::string_view in, UnlinkReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->name = r.Str(kMaxNameLen + 1);
  m->flags = r.U32();
  return r.Done();
}
void Encode(Writer& w, const RenameReq& m) {
  w.U64(m.old_dir);
  w.Str(m.old_name);
  w.U64(m.new_dir);
  w.Str(m.new_name);
  w.U32(m.flags);
}
bool Decode(std::string_view in, RenameReq* m) {
  Reader r(in);
  m->old_dir = r.U64();
  m->old_name = r.Str(kMaxNameLen + 1);
  m->new_dir = r.U64();
  m->new_name = r.Str(kMaxNameLen + 1);
  m->flags = r.U32();
  return r.Done();
}

// ---- Attributes ----
void Encode(Writer& w, const SetAttrReq& m) {
  w.U64(m.handle);
  w.U32(m.mask);
  w.U32(m.mode);
  w.U32(m.uid);
  w.U32(m.gid);
  w.U64(m.size);
  PutTime(w, m.atime);
  PutTime(w, m.mtime);
}
bool Decode(std::string_view in, SetAttrReq* m) {
  Reader r(in);
  m->handle = r.U64();
  m->mask = r.U32();
  m->mode = r.U32();
  m->uid = r.U32();
  m->gid = r.U32();
  m->size = r.U64();
  m->atime = GetTime(r);
  m->mtime = GetTime(r);
  return r.Done();
}

// ---- Directories and file systems ----
void Encode(Writer& w, const GetdentsReq& m) {
  w.U64(m.dir);
  w.U64(m.cookie);
  w.U32(m.max_count);
}
bool Decode(std::string_view in, GetdentsReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->cookie = r.U64();
  m->max_count = r.U32();
  return r.Done();
}
void Encode(Writer& w, const GetdentsResp& m) {
  w.U32(static_cast<uint32_t>(m.dirents.size()));
  for (const auto& d : m.dirents) {
    w.U64(d.ino);
    w.U64(d.next_cookie);
    w.U8(d.type);
    w.Str(d.name);
  }
}
bool Decode(std::string_view in, GetdentsResp* m) {
  Reader r(in);
  uint32_t n = r.Count(kMaxDirents, kMinDirentSize);
  m->dirents.clear();
  m->dirents.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    Dirent d;
    d.ino = r.U64();
    d.next_cookie = r.U64();
    d.type = r.U8();
    d.name = r.Str(kMaxNameLen);
    if (d.name.empty()) r.Fail();
    m->dirents.push_back(std::move(d));
  }
  return r.Done();
}

void Encode(Writer& w, const StatfsResp& m) {
  for (uint64_t v : {m.type, m.bsize, m.blocks, m.bfree, m.bavail, m.files,
                     m.ffree, m.namelen, m.frsize, m.flags}) {
    w.U64(v);
  }
}
bool Decode(std::string_view in, StatfsResp* m) {
  Reader r(in);
  for (uint64_t* v :
       {&m->type, &m->bsize, &m->blocks, &m->bfree, &m->bavail, &m->files,
        &m->ffree, &m->namelen, &m->frsize, &m->flags}) {
    *v = r.U64();
  }
  return r.Done();
}

// ---- Extended attributes ----
void Encode(Writer& w, const GetXattrReq& m) {
  w.U64(m.handle);
  w.Str(m.name);
  w.U32(m.size);
}
bool Decode(std::string_view in, GetXattrReq* m) {
  Reader r(in);
  m->handle = r.U64();
  m->name = r.Str(kMaxXattrNameLen + 1);
  m->size = r.U32();
  return r.Done();
}
void Encode(Writer& w, const GetXattrResp& m) {
  w.U32(m.length);
  w.Str(m.value);
}
bool Decode(std::string_view in, GetXattrResp* m) {
  Reader r(in);
  m->length = r.U32();
  m->value = r.Str(kMaxXattrValueLen);
  return r.Done() && (m->value.empty() || m->value.size() == m->length);
}
void Encode(Writer& w, const SetXattrReq& m) {
  w.U64(m.handle);
  w.Str(m.name);
  w.Str(m.value);
  w.U32(m.flags);
}
bool Decode(std::string_view in, SetXattrReq* m) {
  Reader r(in);
  m->handle = r.U64();
  m->name = r.Str(kMaxXattrNameLen + 1);
  m->value = r.Str(kMaxXattrValueLen + 1);
  m->flags = r.U32();
  return r.Done();
}
void Encode(Writer& w, const ListXattrReq& m) {
  w.U64(m.handle);
  w.U32(m.size);
}
bool Decode(std::string_view in, ListXattrReq* m) {
  Reader r(in);
  m->handle = r.U64();
  m->size = r.U32();
  return r.Done();
}
void Encode(Writer& w, const ListXattrResp& m) {
  w.U32(m.length);
  w.Str(m.names);
}
bool Decode(std::string_view in, ListXattrResp* m) {
  Reader r(in);
  m->length = r.U32();
  m->names = r.Str(kMaxXattrListLen);
  return r.Done() && (m->names.empty() || m->names.size() == m->length);
}
void Encode(Writer& w, const RemoveXattrReq& m) {
  w.U64(m.handle);
  w.Str(m.name);
}
bool Decode(std::string_view in, RemoveXattrReq* m) {
  Reader r(in);
  m->handle = r.U64();
  m->name = r.Str(kMaxXattrNameLen + 1);
  return r.Done();
}

// ---- Close ----
void Encode(Writer& w, const CloseReq& m) {
  w.U32(static_cast<uint32_t>(m.handles.size()));
  for (Handle h : m.handles) w.U64(h);
}
bool Decode(std::string_view in, CloseReq* m) {
  Reader r(in);
  uint32_t n = r.Count(kMaxCloseHandles, 8);
  m->handles.clear();
  m->handles.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) m->handles.push_back(r.U64());
  return r.Done();
}

}  // namespace gofer
