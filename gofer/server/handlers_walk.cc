// Attach, Walk, WalkStat, Stat, Readlink, Statfs: reading the tree.
#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>

#include "gofer/server/session.h"

namespace gofer {

int Session::Attach(const AttachReq&, AttachResp* resp) {
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  int fd = OpenBeneath(root_.get(), ".", O_PATH | O_DIRECTORY, 0);
  if (fd < 0) return -fd;
  std::shared_ptr<Node> node;
  struct stat st;
  int err = NodeFromFd(UniqueFd(fd), &node, &st);
  if (err != 0) return err;
  resp->root.handle = Insert(std::move(node));
  resp->root.stat = ToWire(st);
  resp->max_payload = kMaxPayload;
  resp->read_only = options_.read_only ? 1 : 0;
  return 0;
}

// Walk: one handle per component walked. Stops at the first symlink (its
// handle is the last returned) or at the first failing component (status
// kError, its errno in resp->error). Only a bad start handle is an error
// reply; a component that fails is a successful reply with a short prefix.
int Session::Walk(const WalkReq& req, WalkResp* resp) {
  std::shared_ptr<Node> cur = Find(req.dir);
  if (cur == nullptr) return EBADF;
  for (const std::string& name : req.names) {
    int err = ValidateName(name);
    if (err == 0 && !cur->IsDir()) err = ENOTDIR;
    Inode inode;
    if (err == 0) err = WalkInsert(cur, name, &inode);
    if (err != 0) {
      resp->status = WalkStatus::kError;
      resp->error = static_cast<uint32_t>(err);
      return 0;
    }
    cur = Find(inode.handle);
    resp->inodes.push_back(inode);
    if (cur->type == S_IFLNK) {
      resp->status = WalkStatus::kSymlink;
      return 0;
    }
  }
  resp->status = WalkStatus::kOk;
  return 0;
}

// WalkStat: as Walk, but returns stats only and keeps no handles.
int Session::WalkStat(const WalkStatReq& req, WalkStatResp* resp) {
  std::shared_ptr<Node> cur = Find(req.dir);
  if (cur == nullptr) return EBADF;
  for (const std::string& name : req.names) {
    int err = ValidateName(name);
    std::shared_ptr<Node> next;
    struct stat st;
    if (err == 0) err = WalkOne(cur, name, &next, &st, options_.hidden.get());
    if (err != 0) {
      resp->status = WalkStatus::kError;
      resp->error = static_cast<uint32_t>(err);
      return 0;
    }
    resp->stats.push_back(ToWire(st));
    cur = std::move(next);
    if (cur->type == S_IFLNK) {
      resp->status = WalkStatus::kSymlink;
      return 0;
    }
  }
  resp->status = WalkStatus::kOk;
  return 0;
}

int Session::StatNode(const StatReq& req, StatResp* resp) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  struct stat st;
  if (fstat(node->get(), &st) != 0) return errno;
  resp->stat = ToWire(st);
  return 0;
}

int Session::Readlink(const ReadlinkReq& req, ReadlinkResp* resp) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  if (node->type != S_IFLNK) return EINVAL;
  char buf[kMaxPathLen + 2];
  ssize_t n = readlinkat(node->get(), "", buf, sizeof(buf));
  if (n < 0) return errno;
  if (static_cast<size_t>(n) > kMaxPathLen) return ENAMETOOLONG;
  resp->target.assign(buf, static_cast<size_t>(n));
  return 0;
}

int Session::Statfs(const StatfsReq& req, StatfsResp* resp) {
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  struct statfs s;
  if (fstatfs(node->get(), &s) != 0) return errno;
  resp->type = static_cast<uint64_t>(s.f_type);
  resp->bsize = static_cast<uint64_t>(s.f_bsize);
  resp->blocks = s.f_blocks;
  resp->bfree = s.f_bfree;
  resp->bavail = s.f_bavail;
  resp->files = s.f_files;
  resp->ffree = s.f_ffree;
  resp->namelen = static_cast<uint64_t>(s.f_namelen);
  resp->frsize = static_cast<uint64_t>(s.f_frsize);
  resp->flags = static_cast<uint64_t>(s.f_flags);
  if (options_.read_only) resp->flags |= ST_RDONLY;
  return 0;
}

}  // namespace gofer
