// Open (donates a host FD), Getdents, GetdentsPlus, Fsync, Close.
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gofer/server/session.h"

namespace gofer {
namespace {

// Encoded size of a dirent in a Getdents reply.
size_t DirentWireSize(size_t name_len) { return 8 + 8 + 1 + 4 + name_len; }

int OpenForClient(const Node& node, uint32_t flags, bool read_only,
                  UniqueFd* out) {
  if ((flags & ~static_cast<uint32_t>(kClientOpenFlags)) != 0) return EINVAL;
  int acc = static_cast<int>(flags) & O_ACCMODE;
  if (acc == O_ACCMODE) return EINVAL;
  bool writes = acc != O_RDONLY || (flags & O_TRUNC);
  if (writes && node.IsDir()) return EISDIR;
  if (writes && read_only && node.type == S_IFREG) return EROFS;
  int fd = ReopenNode(node, static_cast<int>(flags));
  if (fd < 0) return -fd;
  UniqueFd owned(fd);
  // The FD is shared with the Sentry: only FIFOs keep O_NONBLOCK (the
  // Gofer never blocks on them; the client implements blocking itself).
  if (node.type != S_IFIFO) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) return errno;
  }
  *out = std::move(owned);
  return 0;
}

}  // namespace

int Session::Open(const OpenReq& req, Empty*, UniqueFd* fd) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  return OpenForClient(*node, req.flags, options_.read_only, fd);
}

namespace {

// Reads the directory from `cookie` on, calling add(dirent, name) for each
// entry but "." and ".." until add returns false (the reply is full).
// Returns 0 or an errno.
template <typename Add>
int ListDir(Node& node, uint64_t cookie, Add&& add) {
  if (!node.dir_fd.valid()) {
    int fd = ReopenNode(node, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -fd;
    node.dir_fd.reset(fd);
  }
  int dfd = node.dir_fd.get();
  if (lseek(dfd, static_cast<off_t>(cookie), SEEK_SET) < 0) return errno;
  alignas(8) char buf[32768];
  for (;;) {
    long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
    if (n < 0) return errno;
    if (n == 0) return 0;
    size_t pos = 0;
    while (pos + offsetof(dirent64, d_name) < static_cast<size_t>(n)) {
      dirent64 d;
      std::memcpy(&d, buf + pos, offsetof(dirent64, d_name));
      if (d.d_reclen < offsetof(dirent64, d_name) + 1 ||
          pos + d.d_reclen > static_cast<size_t>(n)) {
        return EIO;
      }
      const char* name = buf + pos + offsetof(dirent64, d_name);
      size_t len = strnlen(name, d.d_reclen - offsetof(dirent64, d_name));
      std::string_view sv(name, len);
      pos += d.d_reclen;
      if (sv == "." || sv == ".." || len == 0 || len > kMaxNameLen) {
        continue;
      }
      // Stopping mid-buffer is fine: the next request seeks to its cookie.
      if (!add(d, sv)) return 0;
    }
  }
}

}  // namespace

// Getdents: entries after req.cookie (0 = from the start), without "." and
// ".." (the client synthesizes them: the host's ".." of the root lies
// outside the tree). The reply is bounded by max_count and kMaxPayload; an
// empty reply means the end of the directory.
int Session::Getdents(const GetdentsReq& req, GetdentsResp* resp) {
  std::shared_ptr<Node> node;
  int err = FindDir(req.dir, &node);
  if (err != 0) return err;
  if (req.max_count == 0 || req.max_count > kMaxDirents) return EINVAL;
  size_t budget = kMaxPayload - 4;
  return ListDir(
      *node, req.cookie, [&](const dirent64& d, std::string_view sv) {
        if (resp->dirents.size() >= req.max_count ||
            DirentWireSize(sv.size()) > budget) {
          return false;
        }
        budget -= DirentWireSize(sv.size());
        resp->dirents.push_back({d.d_ino, static_cast<uint64_t>(d.d_off),
                                 d.d_type, std::string(sv)});
        return true;
      });
}

// GetdentsPlus: Getdents whose entries are also walked (as a Walk of the
// one name: O_PATH | O_NOFOLLOW, never crossing a mount point), each with
// a new handle and its lstat. An entry that cannot be walked (a mount
// point, a name removed since, the handle limit) comes without an inode.
// If the listing fails part way, the handles made so far are released.
int Session::GetdentsPlus(const GetdentsPlusReq& req, GetdentsPlusResp* resp) {
  std::shared_ptr<Node> node;
  int err = FindDir(req.dir, &node);
  if (err != 0) return err;
  if (req.max_count == 0 || req.max_count > kMaxDirentsPlus) return EINVAL;
  size_t budget = kMaxPayload - 4;
  err = ListDir(*node, req.cookie, [&](const dirent64& d, std::string_view sv) {
    const size_t plain = DirentWireSize(sv.size()) + 1;
    if (resp->dirents.size() >= req.max_count ||
        plain + kInodeWireSize > budget) {
      return false;
    }
    DirentPlus e;
    e.ino = d.d_ino;
    e.next_cookie = static_cast<uint64_t>(d.d_off);
    e.type = d.d_type;
    e.name = std::string(sv);
    if (WalkInsert(node, e.name, &e.inode) == 0) {
      e.has_inode = 1;
      budget -= kInodeWireSize;
    }
    budget -= plain;
    resp->dirents.push_back(std::move(e));
    return true;
  });
  if (err != 0) {
    for (const DirentPlus& e : resp->dirents) {
      if (e.has_inode) nodes_.erase(e.inode.handle);
    }
    resp->dirents.clear();
  }
  return err;
}

int Session::Fsync(const FsyncReq& req, Empty*) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  if (node->type != S_IFREG && node->type != S_IFDIR) return EINVAL;
  int fd = ReopenNode(*node, O_RDONLY);
  if (fd < 0) return -fd;
  UniqueFd owned(fd);
  if (fsync(fd) != 0) return errno;
  return 0;
}

// Close: releases every listed handle it knows; EBADF if any was unknown
// (the known ones are still closed).
int Session::Close(const CloseReq& req, Empty*) {
  int err = 0;
  for (Handle h : req.handles) {
    if (nodes_.erase(h) == 0) err = EBADF;
  }
  return err;
}

}  // namespace gofer
