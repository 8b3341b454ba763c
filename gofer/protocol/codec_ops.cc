// Creation, removal, rename, attributes, directories, xattrs and Close.
#include <cerrno>

#include "gofer/protocol/codec.h"
#include "gofer/protocol/codec_internal.h"

namespace gofer {

using codec_internal::GetInode;
using codec_internal::GetTime;
using codec_internal::kMinDirentPlusSize;
using codec_internal::kMinDirentSize;
using codec_internal::PutInode;
using codec_internal::PutTime;

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

void Encode(Writer& w, const GetdentsPlusReq& m) {
  w.U64(m.dir);
  w.U64(m.cookie);
  w.U32(m.max_count);
}
bool Decode(std::string_view in, GetdentsPlusReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->cookie = r.U64();
  m->max_count = r.U32();
  return r.Done();
}
void Encode(Writer& w, const GetdentsPlusResp& m) {
  w.U32(static_cast<uint32_t>(m.dirents.size()));
  for (const auto& d : m.dirents) {
    w.U64(d.ino);
    w.U64(d.next_cookie);
    w.U8(d.type);
    w.Str(d.name);
    w.U8(d.has_inode);
    if (d.has_inode) PutInode(w, d.inode);
  }
}
// Canonical: has_inode is 0 or 1, and the Inode is there iff it is 1.
bool Decode(std::string_view in, GetdentsPlusResp* m) {
  Reader r(in);
  uint32_t n = r.Count(kMaxDirentsPlus, kMinDirentPlusSize);
  m->dirents.clear();
  m->dirents.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    DirentPlus d;
    d.ino = r.U64();
    d.next_cookie = r.U64();
    d.type = r.U8();
    d.name = r.Str(kMaxNameLen);
    if (d.name.empty()) r.Fail();
    d.has_inode = r.U8();
    if (d.has_inode > 1) r.Fail();
    if (d.has_inode == 1) d.inode = GetInode(r);
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

// ---- Host Unix sockets ----
void Encode(Writer& w, const BindSocketReq& m) {
  w.U64(m.dir);
  w.Str(m.name);
  w.U32(m.type);
  w.U32(m.mode);
  w.U32(m.uid);
  w.U32(m.gid);
}
bool Decode(std::string_view in, BindSocketReq* m) {
  Reader r(in);
  m->dir = r.U64();
  m->name = r.Str(kMaxNameLen + 1);
  m->type = r.U32();
  m->mode = r.U32();
  m->uid = r.U32();
  m->gid = r.U32();
  return r.Done();
}
void Encode(Writer& w, const ConnectSocketReq& m) {
  w.U64(m.handle);
  w.U32(m.type);
}
bool Decode(std::string_view in, ConnectSocketReq* m) {
  Reader r(in);
  m->handle = r.U64();
  m->type = r.U32();
  return r.Done();
}

}  // namespace gofer
