// Session: the state of one gofer connection (its handle table) and the
// handlers of every message, one family per handlers_*.cc file.
//
// Threading: a Session belongs to the one thread serving its connection;
// it has no locks. Connections share nothing but the host file system.
//
// Every handler takes a decoded (but unvalidated) request, validates each
// handle and name, and returns 0 (filling the reply) or a Linux errno.
// A handler that fails leaves no new handle behind.
#ifndef GOFER_SERVER_SESSION_H_
#define GOFER_SERVER_SESSION_H_

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "gofer/protocol/codec.h"
#include "gofer/protocol/messages.h"
#include "gofer/protocol/unique_fd.h"
#include "gofer/server/node.h"

namespace gofer {

struct ServerOptions {
  // Refuse every modification with EROFS (enforced here, not only by the
  // host mount).
  bool read_only = false;
  // false (the default): the host side of the connection is nosuid and
  // nodev for the host's sake, since the files outlive the sandbox and
  // host users may run them:
  // - S_ISUID and S_ISGID never reach a non-directory: they are cleared
  //   from the mode of Create, Mknod and SetAttr (silently, as Linux clears
  //   S_ISGID in chmod by a non-member); directories keep S_ISGID (group
  //   inheritance only; the group is one of ours) and lose S_ISUID (no
  //   meaning on Linux).
  // - Owners are only the Gofer's own ids (the caller of runsc, or root in
  //   its user namespace), as in a rootless container: a creation whose
  //   requested uid or gid is another keeps the Gofer's id for it, and
  //   SetAttr to another id than the Gofer's or the file's current one is
  //   EINVAL (as chown to an id unmapped in a user namespace).
  // Device nodes are never created and only user.* xattrs are served
  // whatever this says. true: the old behaviour (any mode and owner the
  // Gofer's capabilities allow): unsafe, ":suid" flags only.
  bool suid = false;
  // The Gofer's own ids, the owners a nosuid connection gives files;
  // kNoId: geteuid() / getegid() when the Session is made (a confined
  // Gofer sets them before its seccomp filter, which forbids those calls).
  uint32_t owner_uid = kNoId;
  uint32_t owner_gid = kNoId;
  // At most this many live handles; each holds one host FD (two for a
  // directory that was listed). Walks or creations beyond it fail with
  // EMFILE.
  size_t max_handles = 16384;
  // Entries served as empty stand-ins (hidden.h); null: none.
  std::shared_ptr<const Hidden> hidden;
  // Serves BindSocket and ConnectSocket (runsc do --bind=...:uds): the
  // client may make host Unix sockets in this tree and connect to the host
  // sockets in it. false: both are EOPNOTSUPP.
  bool host_sockets = false;
};

// Held shared by every handler that can make a name a symlink (Symlink,
// Link, Rename) and exclusively by the socket handlers, which bind and
// connect through the working directory (handlers_socket.cc): a socket
// node checked not to be a symlink stays so until connect(2) has used it.
// Process-wide: connections to overlapping trees race otherwise.
absl::Mutex& SocketNameMutex();

// A reply to send: errno (0 = success), payload and at most one FD.
struct Reply {
  int error = 0;
  std::string payload;
  UniqueFd fd;
};

class Session {
 public:
  // root: an O_PATH (or O_RDONLY) descriptor of the directory this
  // connection serves; Attach hands out handles to it.
  Session(UniqueFd root, ServerOptions options)
      : root_(std::move(root)),
        options_(options),
        own_uid_(options.owner_uid != kNoId ? options.owner_uid : geteuid()),
        own_gid_(options.owner_gid != kNoId ? options.owner_gid : getegid()) {}

  // Decodes and runs one request. Unknown types give EOPNOTSUPP, payloads
  // that do not decode EINVAL. Never crashes on any input.
  Reply Dispatch(uint16_t type, std::string_view payload);

  size_t handle_count() const { return nodes_.size(); }

  // Handlers (handlers_walk.cc).
  int Attach(const AttachReq& req, AttachResp* resp);
  int Walk(const WalkReq& req, WalkResp* resp);
  int WalkStat(const WalkStatReq& req, WalkStatResp* resp);
  int StatNode(const StatReq& req, StatResp* resp);
  int Readlink(const ReadlinkReq& req, ReadlinkResp* resp);
  int Statfs(const StatfsReq& req, StatfsResp* resp);
  // handlers_io.cc.
  int Open(const OpenReq& req, Empty* resp, UniqueFd* fd);
  int Getdents(const GetdentsReq& req, GetdentsResp* resp);
  int GetdentsPlus(const GetdentsPlusReq& req, GetdentsPlusResp* resp);
  int Fsync(const FsyncReq& req, Empty* resp);
  int Close(const CloseReq& req, Empty* resp);
  // handlers_create.cc.
  int Create(const CreateReq& req, InodeResp* resp, UniqueFd* fd);
  int Mkdir(const MkdirReq& req, InodeResp* resp);
  int Mknod(const MknodReq& req, InodeResp* resp);
  int Symlink(const SymlinkReq& req, InodeResp* resp);
  int Link(const LinkReq& req, InodeResp* resp);
  // handlers_remove.cc.
  int Unlink(const UnlinkReq& req, Empty* resp);
  int Rename(const RenameReq& req, Empty* resp);
  // handlers_attr.cc.
  int SetAttr(const SetAttrReq& req, Empty* resp);
  int GetXattr(const GetXattrReq& req, GetXattrResp* resp);
  int SetXattr(const SetXattrReq& req, Empty* resp);
  int ListXattr(const ListXattrReq& req, ListXattrResp* resp);
  int RemoveXattr(const RemoveXattrReq& req, Empty* resp);
  // handlers_socket.cc.
  int BindSocket(const BindSocketReq& req, InodeResp* resp, UniqueFd* fd);
  int ConnectSocket(const ConnectSocketReq& req, Empty* resp, UniqueFd* fd);

 private:
  // Returns the node of handle h or null (EBADF for the caller).
  std::shared_ptr<Node> Find(Handle h) const;
  // Find() that must be a directory: 0, EBADF or ENOTDIR.
  int FindDir(Handle h, std::shared_ptr<Node>* out) const;
  // Adds node to the table and returns its new handle, or 0 when full.
  Handle Insert(std::shared_ptr<Node> node);
  // Walks name from dir, inserts the node, fills inode. 0 or an errno.
  int WalkInsert(const std::shared_ptr<Node>& dir, const std::string& name,
                 Inode* inode);
  // For a creation in dir under name that the host refused or was not
  // attempted (read-only): Linux reports EEXIST for an existing name before
  // EROFS. Returns EEXIST or EROFS.
  // Whether `name` in `dir` is an entry options_.hidden serves as a
  // stand-in (its host name may not be removed or replaced).
  bool HiddenName(const Node& dir, const std::string& name) const {
    return options_.hidden != nullptr &&
           options_.hidden->HidesName(dir.dev, dir.ino, name);
  }
  int CreateRofsError(const Node& dir, const std::string& name) const;
  // Applies uid/gid (kNoId = keep) to a just-created node fd.
  static int Chown(int fd, uint32_t uid, uint32_t gid);
  // The permission bits a file of this type may get on the host (see
  // ServerOptions::suid).
  uint32_t HostMode(uint32_t type, uint32_t mode) const;
  // The owner id a new file may get: id itself when the connection allows
  // any owner or id is the Gofer's own (own), else kNoId (the Gofer's).
  uint32_t NewOwner(uint32_t id, uint32_t own) const;
  // After creating name in dir: walks it, checks it is the file created
  // (same dev/ino as created, when known), sets owner, inserts it. On
  // failure the new name is removed (unlink_flags) and an errno returned.
  int FinishCreate(const std::shared_ptr<Node>& dir, const std::string& name,
                   const struct stat* created, uint32_t uid, uint32_t gid,
                   int unlink_flags, Inode* inode);

  const UniqueFd root_;
  const ServerOptions options_;
  // ServerOptions::owner_uid / owner_gid resolved: the only owners a
  // nosuid connection gives files.
  const uint32_t own_uid_;
  const uint32_t own_gid_;
  absl::flat_hash_map<Handle, std::shared_ptr<Node>> nodes_;
  Handle next_handle_ = 1;  // Handles are never reused.
};

}  // namespace gofer

#endif  // GOFER_SERVER_SESSION_H_
