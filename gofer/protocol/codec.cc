// Header, Attach, Walk, WalkStat and the single-handle messages.
#include "gofer/protocol/codec.h"

#include <cerrno>

#include "gofer/protocol/codec_internal.h"

namespace gofer {

using codec_internal::GetInode;
using codec_internal::GetNames;
using codec_internal::GetStat;
using codec_internal::kInodeSize;
using codec_internal::kStatSize;
using codec_internal::PutInode;
using codec_internal::PutNames;
using codec_internal::PutStat;
using codec_internal::ValidWalkStatus;

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
    case MessageType::kGetdentsPlus:
      return "GetdentsPlus";
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
    case MessageType::kBindSocket:
      return "BindSocket";
    case MessageType::kConnectSocket:
      return "ConnectSocket";
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

}  // namespace gofer
