// SetAttr and the extended-attribute messages.
//
// Extended attributes: only the "user." namespace is served (others are
// EOPNOTSUPP: trusted.*, security.* and system.* belong to the host), and
// only on regular files and directories (EPERM otherwise, as Linux for
// user.* on other types).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "gofer/server/session.h"

namespace gofer {
namespace {

constexpr std::string_view kUserPrefix = "user.";

timespec ToHost(const Timespec& t, bool set, bool now) {
  if (now) return {0, UTIME_NOW};
  if (!set) return {0, UTIME_OMIT};
  return {static_cast<time_t>(t.sec), static_cast<long>(t.nsec)};
}

// 0, or the errno for an xattr name as copied in: ERANGE (empty or too
// long), EINVAL (embedded NUL).
int CheckXattrName(const std::string& name) {
  if (name.empty() || name.size() > kMaxXattrNameLen) return ERANGE;
  if (name.find('\0') != std::string::npos) return EINVAL;
  return 0;
}

// 0, or EOPNOTSUPP for a name outside user.* (checked by Linux after the
// writable-mount check).
int CheckXattrNamespace(const std::string& name) {
  if (name.size() <= kUserPrefix.size() ||
      std::string_view(name).substr(0, kUserPrefix.size()) != kUserPrefix) {
    return EOPNOTSUPP;
  }
  return 0;
}

// Opens the node for an xattr call (f*xattr do not take O_PATH fds).
int XattrFd(const Node& node, UniqueFd* out) {
  if (node.type != S_IFREG && node.type != S_IFDIR) return EPERM;
  int fd = ReopenNode(node, O_RDONLY);
  if (fd < 0) return -fd;
  out->reset(fd);
  return 0;
}

}  // namespace

// SetAttr: applies size, then mode, then owner, then times, stopping at the
// first failure (earlier changes stay, as with separate truncate, chmod,
// chown and utimensat calls). Every field is checked before any change,
// the owner against what a nosuid connection allows (EINVAL); a mode loses
// the set-id bits such a connection does not put on the host
// (ServerOptions::suid).
int Session::SetAttr(const SetAttrReq& req, Empty*) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  if ((req.mask & ~kSetAllMask) != 0) return EINVAL;
  if (req.mask == 0) return 0;
  if ((req.mask & kSetSize) && node->type != S_IFREG) {
    return node->IsDir() ? EISDIR : EINVAL;
  }
  if ((req.mask & kSetSize) && req.size > static_cast<uint64_t>(INT64_MAX)) {
    return EINVAL;
  }
  // As Linux: truncate's type checks come before the writable-mount check,
  // chmod's symlink check after it.
  if (options_.read_only) return EROFS;
  if ((req.mask & kSetMode) && node->type == S_IFLNK) return EOPNOTSUPP;

  uid_t uid = (req.mask & kSetUid) ? req.uid : static_cast<uid_t>(-1);
  gid_t gid = (req.mask & kSetGid) ? req.gid : static_cast<gid_t>(-1);
  if (!options_.suid && (req.mask & (kSetUid | kSetGid))) {
    // Nosuid: a file goes only to the Gofer's own ids, or keeps its owner.
    struct stat st;
    if (fstat(node->get(), &st) != 0) return errno;
    if ((uid != static_cast<uid_t>(-1) && uid != own_uid_ &&
         uid != st.st_uid) ||
        (gid != static_cast<gid_t>(-1) && gid != own_gid_ &&
         gid != st.st_gid)) {
      return EINVAL;
    }
  }

  if (req.mask & kSetSize) {
    int fd = ReopenNode(*node, O_WRONLY);
    if (fd < 0) return -fd;
    UniqueFd owned(fd);
    if (ftruncate(fd, static_cast<off_t>(req.size)) != 0) return errno;
  }
  if (req.mask & kSetMode) {
    int err = ChmodNode(*node, HostMode(node->type, req.mode));
    if (err != 0) return err;
  }
  if (req.mask & (kSetUid | kSetGid)) {
    if (fchownat(node->get(), "", uid, gid,
                 AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
      return errno;
    }
  }
  uint32_t times = kSetAtime | kSetMtime | kSetAtimeNow | kSetMtimeNow;
  if (req.mask & times) {
    timespec ts[2] = {
        ToHost(req.atime, req.mask & kSetAtime, req.mask & kSetAtimeNow),
        ToHost(req.mtime, req.mask & kSetMtime, req.mask & kSetMtimeNow)};
    if (utimensat(node->get(), "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) !=
        0) {
      return errno;
    }
  }
  return 0;
}

int Session::GetXattr(const GetXattrReq& req, GetXattrResp* resp) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  int err = CheckXattrName(req.name);
  if (err == 0) err = CheckXattrNamespace(req.name);
  if (err != 0) return err;
  UniqueFd fd;
  if ((err = XattrFd(*node, &fd)) != 0) return err;
  size_t size = std::min<size_t>(req.size, kMaxXattrValueLen);
  std::string value(size, '\0');
  ssize_t n = fgetxattr(fd.get(), req.name.c_str(),
                        size ? value.data() : nullptr, size);
  if (n < 0) return errno;
  if (static_cast<size_t>(n) > kMaxXattrValueLen) return E2BIG;
  resp->length = static_cast<uint32_t>(n);
  if (size != 0)
    value.resize(static_cast<size_t>(n));
  else
    value.clear();
  resp->value = std::move(value);
  return 0;
}

int Session::SetXattr(const SetXattrReq& req, Empty*) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  if ((req.flags & ~static_cast<uint32_t>(XATTR_CREATE | XATTR_REPLACE)) != 0) {
    return EINVAL;
  }
  int err = CheckXattrName(req.name);
  if (err != 0) return err;
  if (req.value.size() > kMaxXattrValueLen) return E2BIG;
  if (options_.read_only) return EROFS;
  if ((err = CheckXattrNamespace(req.name)) != 0) return err;
  UniqueFd fd;
  if ((err = XattrFd(*node, &fd)) != 0) return err;
  if (fsetxattr(fd.get(), req.name.c_str(), req.value.data(), req.value.size(),
                static_cast<int>(req.flags)) != 0) {
    return errno;
  }
  return 0;
}

// ListXattr: the user.* names only, NUL-separated.
int Session::ListXattr(const ListXattrReq& req, ListXattrResp* resp) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  UniqueFd fd;
  int err = XattrFd(*node, &fd);
  if (err != 0) return err;
  std::string all(kMaxXattrListLen, '\0');
  ssize_t n = flistxattr(fd.get(), all.data(), all.size());
  if (n < 0) return errno == ERANGE ? E2BIG : errno;
  std::string user;
  std::string_view rest(all.data(), static_cast<size_t>(n));
  while (!rest.empty()) {
    size_t end = rest.find('\0');
    std::string_view name = rest.substr(0, end);
    if (name.substr(0, kUserPrefix.size()) == kUserPrefix) {
      user.append(name);
      user.push_back('\0');
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  resp->length = static_cast<uint32_t>(user.size());
  if (req.size != 0) {
    if (user.size() > req.size) return ERANGE;
    resp->names = std::move(user);
  }
  return 0;
}

int Session::RemoveXattr(const RemoveXattrReq& req, Empty*) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  int err = CheckXattrName(req.name);
  if (err != 0) return err;
  if (options_.read_only) return EROFS;
  if ((err = CheckXattrNamespace(req.name)) != 0) return err;
  UniqueFd fd;
  if ((err = XattrFd(*node, &fd)) != 0) return err;
  if (fremovexattr(fd.get(), req.name.c_str()) != 0) return errno;
  return 0;
}

}  // namespace gofer
