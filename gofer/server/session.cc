#include "gofer/server/session.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>

namespace gofer {
namespace {

// Decodes Req, runs the handler, encodes its reply.
template <typename Req, typename Fn>
Reply Run(std::string_view payload, Fn&& fn) {
  Reply reply;
  Req req;
  if (!Decode(payload, &req)) {
    reply.error = EINVAL;
    return reply;
  }
  typename Rpc<Req>::Reply resp;
  if constexpr (Rpc<Req>::kReplyFds > 0) {
    reply.error = fn(req, &resp, &reply.fd);
  } else {
    reply.error = fn(req, &resp);
  }
  if (reply.error == 0) {
    reply.payload = EncodeToString(resp);
    if (reply.payload.size() > kMaxPayload) {  // Handlers bound their replies.
      reply.payload.clear();
      reply.fd.reset();
      reply.error = EIO;
    }
  } else {
    reply.fd.reset();
  }
  return reply;
}

}  // namespace

Reply Session::Dispatch(uint16_t type, std::string_view payload) {
#define CASE(T, Req, fn) \
  case MessageType::T:   \
    return Run<Req>(payload, [this](auto&&... a) { return fn(a...); });
  switch (static_cast<MessageType>(type)) {
    CASE(kAttach, AttachReq, Attach)
    CASE(kWalk, WalkReq, Walk)
    CASE(kWalkStat, WalkStatReq, WalkStat)
    CASE(kStat, StatReq, StatNode)
    CASE(kOpen, OpenReq, Open)
    CASE(kCreate, CreateReq, Create)
    CASE(kMkdir, MkdirReq, Mkdir)
    CASE(kMknod, MknodReq, Mknod)
    CASE(kSymlink, SymlinkReq, Symlink)
    CASE(kLink, LinkReq, Link)
    CASE(kReadlink, ReadlinkReq, Readlink)
    CASE(kUnlink, UnlinkReq, Unlink)
    CASE(kRename, RenameReq, Rename)
    CASE(kSetAttr, SetAttrReq, SetAttr)
    CASE(kGetdents, GetdentsReq, Getdents)
    CASE(kGetdentsPlus, GetdentsPlusReq, GetdentsPlus)
    CASE(kStatfs, StatfsReq, Statfs)
    CASE(kFsync, FsyncReq, Fsync)
    CASE(kGetXattr, GetXattrReq, GetXattr)
    CASE(kSetXattr, SetXattrReq, SetXattr)
    CASE(kListXattr, ListXattrReq, ListXattr)
    CASE(kRemoveXattr, RemoveXattrReq, RemoveXattr)
    CASE(kClose, CloseReq, Close)
    CASE(kBindSocket, BindSocketReq, BindSocket)
    CASE(kConnectSocket, ConnectSocketReq, ConnectSocket)
  }
#undef CASE
  Reply reply;
  reply.error = EOPNOTSUPP;
  return reply;
}

std::shared_ptr<Node> Session::Find(Handle h) const {
  auto it = nodes_.find(h);
  return it == nodes_.end() ? nullptr : it->second;
}

int Session::FindDir(Handle h, std::shared_ptr<Node>* out) const {
  *out = Find(h);
  if (*out == nullptr) return EBADF;
  if (!(*out)->IsDir()) return ENOTDIR;
  return 0;
}

Handle Session::Insert(std::shared_ptr<Node> node) {
  if (nodes_.size() >= options_.max_handles) return 0;
  Handle h = next_handle_++;
  nodes_.emplace(h, std::move(node));
  return h;
}

int Session::WalkInsert(const std::shared_ptr<Node>& dir,
                        const std::string& name, Inode* inode) {
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  std::shared_ptr<Node> node;
  struct stat st;
  int err = WalkOne(dir, name, &node, &st, options_.hidden.get());
  if (err != 0) return err;
  inode->handle = Insert(std::move(node));
  inode->stat = ToWire(st);
  return 0;
}

int Session::CreateRofsError(const Node& dir, const std::string& name) const {
  struct stat st;
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    return EEXIST;
  }
  return EROFS;
}

int Session::Chown(int fd, uint32_t uid, uint32_t gid) {
  if (uid == kNoId && gid == kNoId) return 0;
  if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    return errno;
  }
  return 0;
}

uint32_t Session::HostMode(uint32_t type, uint32_t mode) const {
  mode &= 07777;
  if (options_.suid) return mode;
  return type == S_IFDIR ? mode & ~S_ISUID : mode & ~(S_ISUID | S_ISGID);
}

uint32_t Session::NewOwner(uint32_t id, uint32_t own) const {
  return options_.suid || id == own ? id : kNoId;
}

int Session::FinishCreate(const std::shared_ptr<Node>& dir,
                          const std::string& name, const struct stat* created,
                          uint32_t uid, uint32_t gid, int unlink_flags,
                          Inode* inode) {
  int err = 0;
  std::shared_ptr<Node> node;
  struct stat st;
  if (nodes_.size() >= options_.max_handles) {
    err = EMFILE;
  } else {
    err = WalkOne(dir, name, &node, &st, options_.hidden.get());
  }
  if (err == 0 && created != nullptr && !node->Same(*created)) err = ESTALE;
  if (err == 0) err = Chown(node->get(), uid, gid);
  if (err == 0 && fstat(node->get(), &st) != 0) err = errno;
  if (err != 0) {
    // Undo only what this request made: the name must still be the node
    // just created (a swapped-in file is left alone).
    struct stat now;
    if (node != nullptr &&
        fstatat(dir->get(), name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        node->Same(now)) {
      unlinkat(dir->get(), name.c_str(), unlink_flags);
    }
    return err;
  }
  inode->handle = Insert(std::move(node));
  inode->stat = ToWire(st);
  return 0;
}

}  // namespace gofer
