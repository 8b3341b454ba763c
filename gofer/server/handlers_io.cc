// Open (donates a host FD), Getdents, Fsync, Close.
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

// Getdents: entries after req.cookie (0 = from the start), without "." and
// ".." (the client synthesizes them: the host's ".." of the root lies
// outside the tree). The reply is bounded by max_count and kMaxPayload; an
// empty reply means the end of the directory.
int Session::Getdents(const GetdentsReq& req, GetdentsResp* resp) {
  std::shared_ptr<Node> node;
  int err = FindDir(req.dir, &node);
  if (err != 0) return err;
  if (req.max_count == 0 || req.max_count > kMaxDirents) return EINVAL;
  if (!node->dir_fd.valid()) {
    int fd = ReopenNode(*node, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -fd;
    node->dir_fd.reset(fd);
  }
  int dfd = node->dir_fd.get();
  if (lseek(dfd, static_cast<off_t>(req.cookie), SEEK_SET) < 0) return errno;
  size_t budget = kMaxPayload - 4;
  alignas(8) char buf[32768];
  while (resp->dirents.size() < req.max_count) {
    long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
    if (n < 0) return errno;
    if (n == 0) return 0;
    size_t pos = 0;
    bool full = false;
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
      if (resp->dirents.size() >= req.max_count ||
          DirentWireSize(len) > budget) {
        full = true;
        break;
      }
      budget -= DirentWireSize(len);
      resp->dirents.push_back(
          {d.d_ino, static_cast<uint64_t>(d.d_off), d.d_type, std::string(sv)});
    }
    // Stopping mid-buffer is fine: the next request seeks to its cookie.
    if (full) return 0;
  }
  return 0;
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
