// Gofer protocol messages (docs/gofer-protocol.md is the specification).
//
// Every message is a 32-byte little-endian Header followed by payload_len
// bytes of payload, encoded field by field. These structs are the decoded,
// host-endian form. Each declares its wire layout once, in Fields() (the
// field kinds are in fields.h), and Valid() where fields constrain each
// other; codec.h's one Encode and one Decode walk that list. Nothing here
// trusts its contents: the decoder bounds every length, and the server
// validates names and handles again before use.
#ifndef GOFER_PROTOCOL_MESSAGES_H_
#define GOFER_PROTOCOL_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gofer {

inline constexpr uint32_t kMagic = 0x52464F47;  // "GOFR" little-endian.
inline constexpr uint16_t kVersion = 1;
inline constexpr size_t kHeaderSize = 32;
inline constexpr uint32_t kMaxPayload = 1 << 20;  // 1 MiB.
inline constexpr uint32_t kMaxFdsPerMessage =
    1;  // Only Open, Create, BindSocket and ConnectSocket donate.

// Bounds enforced by the decoder (both sides). Names in requests may be
// empty on the wire and one byte over kMaxNameLen (kMaxNameLen + 1): the
// server answers EINVAL/ENAMETOOLONG rather than failing the decode (so
// too for paths and xattr names). Names in replies are 1..kMaxNameLen.
inline constexpr size_t kMaxNameLen = 255;          // NAME_MAX.
inline constexpr size_t kMaxPathLen = 4095;         // PATH_MAX - 1 (symlinks).
inline constexpr size_t kMaxWalkNames = 255;        // Components per Walk.
inline constexpr size_t kMaxXattrNameLen = 255;     // XATTR_NAME_MAX.
inline constexpr size_t kMaxXattrValueLen = 65536;  // XATTR_SIZE_MAX.
inline constexpr size_t kMaxXattrListLen = 65536;   // XATTR_LIST_MAX.
inline constexpr size_t kMaxCloseHandles = 4096;
inline constexpr size_t kMaxDirents = 4096;  // Per Getdents reply.
// Encoded size of an Inode (handle and Stat).
inline constexpr size_t kInodeWireSize = 8 + 96;
// Per GetdentsPlus reply (each entry may carry a handle and a Stat).
inline constexpr size_t kMaxDirentsPlus = 1024;

// Header.flags.
inline constexpr uint16_t kFlagReply = 1;

enum class MessageType : uint16_t {
  kAttach = 1,
  kWalk = 2,
  kWalkStat = 3,
  kStat = 4,
  kOpen = 5,
  kCreate = 6,
  kMkdir = 7,
  kMknod = 8,
  kSymlink = 9,
  kLink = 10,
  kReadlink = 11,
  kUnlink = 12,
  kRename = 13,
  kSetAttr = 14,
  kGetdents = 15,
  kStatfs = 16,
  kFsync = 17,
  kGetXattr = 18,
  kSetXattr = 19,
  kListXattr = 20,
  kRemoveXattr = 21,
  kClose = 22,
  kGetdentsPlus = 23,  // Revision 1 of version 1 (see the protocol doc).
  kBindSocket = 24,    // Revision 2: host Unix sockets (":uds" only).
  kConnectSocket = 25,
};
inline constexpr uint16_t kMaxMessageType = 25;

const char* MessageTypeName(MessageType t);

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t type = 0;
  uint16_t flags = 0;       // kFlagReply on replies; requests send 0.
  uint16_t num_fds = 0;     // FDs attached by SCM_RIGHTS to this message.
  uint32_t error = 0;       // Replies: 0 or a Linux errno. Requests: 0.
  uint64_t request_id = 0;  // Echoed in the reply.
  uint32_t payload_len = 0;
  uint32_t reserved = 0;  // Must be 0.
  template <class V>
  constexpr void Fields(V& v) {
    v(magic, version, type, flags, num_fds, error, request_id, payload_len,
      reserved);
  }
};

// Handles name server-side nodes; 0 is never a valid handle.
using Handle = uint64_t;
inline constexpr uint32_t kNoId = 0xFFFFFFFF;  // uid/gid: leave unchanged.

struct Timespec {
  int64_t sec = 0;
  uint32_t nsec = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(sec, nsec);
  }
  bool Valid() const { return nsec < 1000000000u; }
};

// A host stat(2) result.
struct Stat {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint32_t mode = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t rdev = 0;
  uint64_t size = 0;
  uint32_t blksize = 0;
  uint64_t blocks = 0;
  Timespec atime, mtime, ctime;
  template <class V>
  constexpr void Fields(V& v) {
    v(dev, ino, mode, nlink, uid, gid, rdev, size, blksize, blocks, atime,
      mtime, ctime);
  }
};

// A walked node: its new handle and stat.
struct Inode {
  Handle handle = 0;
  Stat stat;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle, stat);
  }
};

// ---- Requests and replies (a message without a reply struct replies with
// an empty payload). ----

struct AttachReq {
  template <class V>
  constexpr void Fields(V&) {}
};
struct AttachResp {
  Inode root;
  uint32_t max_payload = kMaxPayload;
  uint8_t read_only = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(root, max_payload, read_only);
  }
  bool Valid() const { return read_only <= 1; }
};

// Walk status: why the walk stopped.
enum class WalkStatus : uint8_t {
  kOk = 0,       // Every name walked.
  kSymlink = 1,  // The last returned inode is a symlink; walk stopped there.
  kError = 2,    // names[inodes.size()] failed with error (ENOENT, ...).
};

// Why a walk stopped: kError, and only it, carries an errno.
inline bool ValidWalkStop(WalkStatus status, uint32_t error) {
  return static_cast<uint8_t>(status) <= 2 &&
         (status == WalkStatus::kError) == (error != 0);
}

// Walk and WalkStat: one request layout, two message types.
template <MessageType kType>
struct WalkNamesReq {
  Handle dir = 0;
  std::vector<std::string> names;
  template <class V>
  constexpr void Fields(V& v) {
    v(dir);
    v.StrList(names, kMaxWalkNames, kMaxNameLen + 1);
  }
};
using WalkReq = WalkNamesReq<MessageType::kWalk>;
struct WalkResp {
  WalkStatus status = WalkStatus::kOk;
  uint32_t error = 0;  // Set iff status == kError.
  std::vector<Inode> inodes;
  template <class V>
  constexpr void Fields(V& v) {
    v(status, error);
    v.List(inodes, kMaxWalkNames);
  }
  bool Valid() const { return ValidWalkStop(status, error); }
};

// Like Walk but returns stats only (no handles are created).
using WalkStatReq = WalkNamesReq<MessageType::kWalkStat>;
struct WalkStatResp {
  WalkStatus status = WalkStatus::kOk;
  uint32_t error = 0;
  std::vector<Stat> stats;
  template <class V>
  constexpr void Fields(V& v) {
    v(status, error);
    v.List(stats, kMaxWalkNames);
  }
  bool Valid() const { return ValidWalkStop(status, error); }
};

struct StatReq {
  Handle handle = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle);
  }
};
struct StatResp {
  Stat stat;
  template <class V>
  constexpr void Fields(V& v) {
    v(stat);
  }
};

// Open: flags are O_ACCMODE | O_TRUNC | O_APPEND | O_DSYNC | O_SYNC |
// O_DIRECT | O_NOATIME | O_DIRECTORY; the reply donates one host FD.
struct OpenReq {
  Handle handle = 0;
  uint32_t flags = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle, flags);
  }
};

struct CreateReq {
  Handle dir = 0;
  std::string name;
  uint32_t flags = 0;  // As Open; O_CREAT|O_EXCL are implied.
  uint32_t mode = 0;   // Permission bits only.
  uint32_t uid = kNoId;
  uint32_t gid = kNoId;
  template <class V>
  constexpr void Fields(V& v) {
    v(dir);
    v.Str(name, kMaxNameLen + 1);
    v(flags, mode, uid, gid);
  }
};
// Create donates one host FD. Mkdir/Mknod/Symlink/Link reply with Inode.
struct InodeResp {
  Inode inode;
  template <class V>
  constexpr void Fields(V& v) {
    v(inode);
  }
};

// Mkdir and Mknod: one layout, two message types.
template <MessageType kType>
struct DirNameModeReq {
  Handle dir = 0;
  std::string name;
  // Mkdir: permission bits; Mknod: S_IFIFO, S_IFSOCK or S_IFREG plus
  // permissions.
  uint32_t mode = 0;
  uint32_t uid = kNoId;
  uint32_t gid = kNoId;
  template <class V>
  constexpr void Fields(V& v) {
    v(dir);
    v.Str(name, kMaxNameLen + 1);
    v(mode, uid, gid);
  }
};
using MkdirReq = DirNameModeReq<MessageType::kMkdir>;
using MknodReq = DirNameModeReq<MessageType::kMknod>;

struct SymlinkReq {
  Handle dir = 0;
  std::string name;
  std::string target;
  uint32_t uid = kNoId;
  uint32_t gid = kNoId;
  template <class V>
  constexpr void Fields(V& v) {
    v(dir);
    v.Str(name, kMaxNameLen + 1);
    v.Str(target, kMaxPathLen + 1);
    v(uid, gid);
  }
};

struct LinkReq {
  Handle dir = 0;
  std::string name;
  Handle target = 0;  // An existing non-directory.
  template <class V>
  constexpr void Fields(V& v) {
    v(dir);
    v.Str(name, kMaxNameLen + 1);
    v(target);
  }
};

struct ReadlinkReq {
  Handle handle = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle);
  }
};
struct ReadlinkResp {
  std::string target;
  template <class V>
  constexpr void Fields(V& v) {
    v.Str(target, kMaxPathLen + 1);
  }
};

// Unlink flags: 0 or AT_REMOVEDIR (0x200).
struct UnlinkReq {
  Handle dir = 0;
  std::string name;
  uint32_t flags = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(dir);
    v.Str(name, kMaxNameLen + 1);
    v(flags);
  }
};

// Rename flags: 0, RENAME_NOREPLACE (1) or RENAME_EXCHANGE (2).
struct RenameReq {
  Handle old_dir = 0;
  std::string old_name;
  Handle new_dir = 0;
  std::string new_name;
  uint32_t flags = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(old_dir);
    v.Str(old_name, kMaxNameLen + 1);
    v(new_dir);
    v.Str(new_name, kMaxNameLen + 1);
    v(flags);
  }
};

// SetAttr mask bits.
inline constexpr uint32_t kSetMode = 1 << 0;
inline constexpr uint32_t kSetUid = 1 << 1;
inline constexpr uint32_t kSetGid = 1 << 2;
inline constexpr uint32_t kSetSize = 1 << 3;
inline constexpr uint32_t kSetAtime = 1 << 4;
inline constexpr uint32_t kSetMtime = 1 << 5;
inline constexpr uint32_t kSetAtimeNow = 1 << 6;
inline constexpr uint32_t kSetMtimeNow = 1 << 7;
inline constexpr uint32_t kSetAllMask = (1 << 8) - 1;

struct SetAttrReq {
  Handle handle = 0;
  uint32_t mask = 0;
  uint32_t mode = 0;
  uint32_t uid = kNoId;
  uint32_t gid = kNoId;
  uint64_t size = 0;
  Timespec atime, mtime;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle, mask, mode, uid, gid, size, atime, mtime);
  }
};

struct GetdentsReq {
  Handle dir = 0;
  uint64_t cookie = 0;     // 0 = start; else a Dirent.next_cookie.
  uint32_t max_count = 0;  // 1..kMaxDirents.
  template <class V>
  constexpr void Fields(V& v) {
    v(dir, cookie, max_count);
  }
};
struct Dirent {
  uint64_t ino = 0;
  uint64_t next_cookie = 0;  // Resume after this entry.
  uint8_t type = 0;          // DT_* value.
  std::string name;
  template <class V>
  constexpr void Fields(V& v) {
    v(ino, next_cookie, type);
    v.Str(name, kMaxNameLen, /*min=*/1);
  }
};
struct GetdentsResp {
  std::vector<Dirent> dirents;  // Empty = end of directory.
  template <class V>
  constexpr void Fields(V& v) {
    v.List(dirents, kMaxDirents);
  }
};

// GetdentsPlus (READDIRPLUS): Getdents whose entries also carry a walked
// Inode (a new handle and the lstat), so the client caches each child and
// a stat of it needs no Walk. has_inode is 0 where the server could not
// walk the name (a mount point, the handle limit, a name gone since).
struct GetdentsPlusReq {
  Handle dir = 0;
  uint64_t cookie = 0;     // As Getdents.
  uint32_t max_count = 0;  // 1..kMaxDirentsPlus.
  template <class V>
  constexpr void Fields(V& v) {
    v(dir, cookie, max_count);
  }
};
struct DirentPlus {
  uint64_t ino = 0;
  uint64_t next_cookie = 0;
  uint8_t type = 0;
  std::string name;
  uint8_t has_inode = 0;  // 0 or 1; inode is on the wire only if 1.
  Inode inode;
  template <class V>
  constexpr void Fields(V& v) {
    v(ino, next_cookie, type);
    v.Str(name, kMaxNameLen, /*min=*/1);
    v.Flag(has_inode);
    v.Optional(has_inode, inode);
  }
};
struct GetdentsPlusResp {
  std::vector<DirentPlus> dirents;  // Empty = end of directory.
  template <class V>
  constexpr void Fields(V& v) {
    v.List(dirents, kMaxDirentsPlus);
  }
};

struct StatfsReq {
  Handle handle = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle);
  }
};
struct StatfsResp {
  uint64_t type = 0;
  uint64_t bsize = 0;
  uint64_t blocks = 0;
  uint64_t bfree = 0;
  uint64_t bavail = 0;
  uint64_t files = 0;
  uint64_t ffree = 0;
  uint64_t namelen = 0;
  uint64_t frsize = 0;
  uint64_t flags = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(type, bsize, blocks, bfree, bavail, files, ffree, namelen, frsize, flags);
  }
};

struct FsyncReq {
  Handle handle = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle);
  }
};

struct GetXattrReq {
  Handle handle = 0;
  std::string name;
  uint32_t size = 0;  // 0 = return only the length.
  template <class V>
  constexpr void Fields(V& v) {
    v(handle);
    v.Str(name, kMaxXattrNameLen + 1);
    v(size);
  }
};
struct GetXattrResp {
  uint32_t length = 0;  // Value length (when size was 0, value is empty).
  std::string value;
  template <class V>
  constexpr void Fields(V& v) {
    v(length);
    v.Str(value, kMaxXattrValueLen);
  }
  // The value, when there is one, is `length` bytes long.
  bool Valid() const { return value.empty() || value.size() == length; }
};

struct SetXattrReq {
  Handle handle = 0;
  std::string name;
  std::string value;
  uint32_t flags = 0;  // 0, XATTR_CREATE (1) or XATTR_REPLACE (2).
  template <class V>
  constexpr void Fields(V& v) {
    v(handle);
    v.Str(name, kMaxXattrNameLen + 1);
    v.Str(value, kMaxXattrValueLen + 1);
    v(flags);
  }
};

struct ListXattrReq {
  Handle handle = 0;
  uint32_t size = 0;  // 0 = return only the length.
  template <class V>
  constexpr void Fields(V& v) {
    v(handle, size);
  }
};
struct ListXattrResp {
  uint32_t length = 0;
  std::string names;  // NUL-separated, as listxattr(2).
  template <class V>
  constexpr void Fields(V& v) {
    v(length);
    v.Str(names, kMaxXattrListLen);
  }
  bool Valid() const { return names.empty() || names.size() == length; }
};

struct RemoveXattrReq {
  Handle handle = 0;
  std::string name;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle);
    v.Str(name, kMaxXattrNameLen + 1);
  }
};

struct CloseReq {
  std::vector<Handle> handles;
  template <class V>
  constexpr void Fields(V& v) {
    v.List(handles, kMaxCloseHandles);
  }
};

// ---- Host Unix sockets (revision 2). Served only on connections that
// serve host sockets (gofer --volume=...:uds, runsc do --bind=...:uds);
// any other connection answers EOPNOTSUPP. ----

// The socket types a host Unix socket may have.
inline bool ValidSocketType(uint32_t type) {
  return type == 1 /* SOCK_STREAM */ || type == 2 /* SOCK_DGRAM */ ||
         type == 5 /* SOCK_SEQPACKET */;
}
// The longest name BindSocket binds: sun_path (108 bytes) less its NUL.
inline constexpr size_t kMaxSocketNameLen = 107;

// BindSocket: a new host AF_UNIX socket of `type`, bound at `name` in
// `dir` (the node gets permission bits `mode & 0777`, then the owner as
// Mknod), not listening. Replies with the node's Inode and donates the
// socket (O_NONBLOCK: the client implements blocking).
struct BindSocketReq {
  Handle dir = 0;
  std::string name;
  uint32_t type = 0;
  uint32_t mode = 0;
  uint32_t uid = kNoId;
  uint32_t gid = kNoId;
  template <class V>
  constexpr void Fields(V& v) {
    v(dir);
    v.Str(name, kMaxNameLen + 1);
    v(type, mode, uid, gid);
  }
};

// ConnectSocket: a new host AF_UNIX socket of `type` connected to the
// socket node `handle` (never through a symlink); donates it (O_NONBLOCK).
struct ConnectSocketReq {
  Handle handle = 0;
  uint32_t type = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(handle, type);
  }
};

}  // namespace gofer

#endif  // GOFER_PROTOCOL_MESSAGES_H_
