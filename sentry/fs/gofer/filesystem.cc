#include "sentry/fs/gofer/filesystem.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "sentry/fs/gofer/directory.h"
#include "sentry/fs/gofer/inode.h"
#include "sentry/fs/gofer/regular_file.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::fs::gofer {

CallStats& GoferCallStats() {
  static CallStats* stats = new CallStats();
  return *stats;
}

CallTimer::CallTimer(wire::MessageType type)
    : type_(static_cast<uint16_t>(type)), start_ns_(vfs::MonotonicNowNs()) {}

CallTimer::~CallTimer() {
  const auto ns = static_cast<uint64_t>(vfs::MonotonicNowNs() - start_ns_);
  CallStats& s = GoferCallStats();
  s.all.Add(ns);
  if (type_ <= wire::kMaxMessageType) s.by_type[type_].Add(ns);
}

std::string GoferStatsSummary() {
  CallStats& s = GoferCallStats();
  std::string out =
      absl::StrFormat("gofer: %d calls, %.1f ms waited (max %.0f us)",
                      s.all.count(), s.all.sum() / 1e6, s.all.longest() / 1e3);
  const char* sep = ": ";
  for (uint16_t t = 1; t <= wire::kMaxMessageType; ++t) {
    const platform::TimedStat& c = s.by_type[t];
    if (c.count() == 0) continue;
    absl::StrAppendFormat(
        &out, "%s%s %d in %.1f ms (max %.0f us)", sep,
        wire::MessageTypeName(static_cast<wire::MessageType>(t)), c.count(),
        c.sum() / 1e6, c.longest() / 1e3);
    sep = ", ";
  }
  return out;
}

namespace {

constexpr uint32_t kMaxLinuxErrno = 133;  // EHWPOISON

}  // namespace

Errno GoferFilesystem::MapError(uint32_t err) {
  if (err == 0 || err > kMaxLinuxErrno || err == EPROTO || err == EPIPE) {
    return kEIO;
  }
  // The Gofer's handles or a process's host FDs ran out, never the guest's
  // own table (that is EMFILE from the VFS): to the guest it is the
  // system-wide limit, as Linux's ENFILE.
  if (err == EMFILE) return kENFILE;
  return Errno(static_cast<int>(err));
}

GoferFilesystem::GoferFilesystem(std::unique_ptr<wire::GoferClient> client,
                                 const Options& opts)
    : client_(std::move(client)),
      opts_(opts),
      fd_cache_(opts.max_host_fds),
      dcache_(std::max<size_t>(1, opts.max_cached_inodes / 4)) {}

KResult<std::shared_ptr<GoferFilesystem>> GoferFilesystem::Create(
    std::unique_ptr<wire::GoferClient> client, const Options& opts) {
  std::shared_ptr<GoferFilesystem> fs(
      new GoferFilesystem(std::move(client), opts));
  wire::AttachResp a;
  TRY_VOID(fs->Call(wire::AttachReq{}, &a));
  // ReplyFits checked a non-zero handle on a directory.
  if (!S_ISDIR(a.root.stat.mode)) return kEIO;
  if (a.read_only) fs->opts_.read_only = true;
  fs->root_handle_ = a.root.handle;
  TRY(std::shared_ptr<GoferInode> root, fs->InodeFor(a.root));
  fs->root_ = vfs::Dentry::NewRoot(std::move(root));
  return fs;
}

KResult<std::shared_ptr<GoferFilesystem>> NewGoferFilesystem(
    wire::UniqueFd sock, const Options& opts) {
  return GoferFilesystem::Create(
      std::make_unique<wire::GoferClient>(std::move(sock)), opts);
}

namespace {

// The Gofer's reply is hostile input: a donated "socket" must be one.
bool IsSocketFd(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

KResult<vfs::HostSocketBinding> GoferFilesystem::BindSocket(
    vfs::Inode& dir, std::string_view name, const vfs::NewInodeAttrs& attrs,
    int type) {
  if (!opts_.host_sockets) return kEOPNOTSUPP;
  // A mount-point placeholder (no Gofer handle): nothing of the host here.
  auto* d = dynamic_cast<GoferDirectory*>(&dir);
  if (d == nullptr || &dir.fs() != this) return kEROFS;
  wire::UniqueFd fd;
  KResult<std::shared_ptr<vfs::Inode>> node =
      d->BindSocketChild(name, attrs, type, &fd);
  if (!node.ok()) {
    // A Gofer that does not serve host sockets here (it answers
    // EOPNOTSUPP): the guest may not bind there.
    return node.error() == kEOPNOTSUPP ? kEACCES : node.error();
  }
  if (!IsSocketFd(fd.get())) return kEIO;
  return vfs::HostSocketBinding{std::move(node).value(),
                                vfs::OwnedFd(fd.release())};
}

KResult<vfs::OwnedFd> GoferFilesystem::ConnectSocket(vfs::Inode& node,
                                                     int type) {
  if (!opts_.host_sockets) return kECONNREFUSED;
  auto* n = dynamic_cast<GoferInode*>(&node);
  if (n == nullptr || &node.fs() != this || node.type() != S_IFSOCK) {
    return kECONNREFUSED;
  }
  wire::Empty e;
  wire::UniqueFd fd;
  KResult<void> r =
      Call(wire::ConnectSocketReq{n->handle(), static_cast<uint32_t>(type)}, &e,
           &fd);
  if (!r.ok()) return r.error() == kEOPNOTSUPP ? kECONNREFUSED : r.error();
  if (!IsSocketFd(fd.get())) return kEIO;
  return vfs::OwnedFd(fd.release());
}

GoferFilesystem::~GoferFilesystem() {
  // Inodes call back into this object as they die: drop them first.
  dcache_.Clear();
  root_.reset();
  {
    absl::MutexLock l(&trim_mu_);
    cached_order_.clear();
  }
  FlushCloses();
}

bool GoferFilesystem::ReserveFileData(size_t n) {
  size_t cur = file_data_bytes_.load(std::memory_order_relaxed);
  do {
    if (n > opts_.max_cached_file_bytes -
                std::min(cur, opts_.max_cached_file_bytes)) {
      return false;
    }
  } while (!file_data_bytes_.compare_exchange_weak(cur, cur + n,
                                                   std::memory_order_relaxed));
  return true;
}

KResult<std::shared_ptr<GoferInode>> GoferFilesystem::InodeFor(
    const wire::Inode& wi) {
  const uint32_t type = wi.stat.mode & S_IFMT;
  switch (type) {
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK:
      break;
    default:
      ReleaseHandle(wi.handle);
      return kEIO;
  }
  std::shared_ptr<GoferInode> existing;
  {
    absl::MutexLock l(&inodes_mu_);
    auto it = inodes_.find({wi.stat.dev, wi.stat.ino});
    if (it != inodes_.end()) existing = it->second.lock();
    if (existing == nullptr) {
      std::shared_ptr<GoferInode> inode;
      switch (type) {
        case S_IFDIR:
          inode = std::make_shared<GoferDirectory>(*this, wi);
          break;
        case S_IFREG:
          inode = std::make_shared<GoferRegularFile>(*this, wi);
          break;
        case S_IFLNK:
          inode = std::make_shared<GoferSymlink>(*this, wi);
          break;
        case S_IFIFO:
          inode = std::make_shared<GoferFifo>(*this, wi);
          break;
        default:
          inode = std::make_shared<GoferSpecial>(*this, wi);
          break;
      }
      inodes_[{wi.stat.dev, wi.stat.ino}] = inode;
      return inode;
    }
  }
  // A file already known: its live handle serves, the new one goes.
  ReleaseHandle(wi.handle);
  if (existing->type() != type) return kEIO;
  existing->ApplyStat(wi.stat);  // the freshest host attributes
  return existing;
}

void GoferFilesystem::ForgetInode(uint64_t dev, uint64_t ino,
                                  const GoferInode* inode) {
  absl::MutexLock l(&inodes_mu_);
  auto it = inodes_.find({dev, ino});
  // Only our own record: a dying inode's weak_ptr is expired; a newer
  // inode for the same file may have replaced it already.
  if (it != inodes_.end() && it->second.expired()) inodes_.erase(it);
  (void)inode;
}

void GoferFilesystem::ReleaseHandle(wire::Handle h) {
  bool flush;
  {
    absl::MutexLock l(&close_mu_);
    pending_close_.push_back(h);
    flush = pending_close_.size() >= kCloseBatch;
  }
  if (flush) FlushCloses();
}

void GoferFilesystem::FlushCloses() {
  std::vector<wire::Handle> handles;
  {
    absl::MutexLock l(&close_mu_);
    handles.swap(pending_close_);
  }
  for (size_t i = 0; i < handles.size(); i += wire::kMaxCloseHandles) {
    size_t end = std::min(handles.size(), i + wire::kMaxCloseHandles);
    wire::CloseReq req;
    req.handles.assign(handles.begin() + i, handles.begin() + end);
    wire::Empty e;
    // Nothing to do on failure: the handles are gone from our side, and
    // the Gofer releases all of them when the connection ends.
    (void)Call(req, &e);
  }
}

void GoferFilesystem::NoteCached(const std::shared_ptr<GoferDirectory>& dir,
                                 std::string name) {
  absl::MutexLock l(&trim_mu_);
  cached_order_.emplace_back(dir, std::move(name));
}

void GoferFilesystem::RelieveFdPressure() {
  fd_pressure_.fetch_add(1, std::memory_order_relaxed);
  fd_cache_.EvictAll();
  TrimCacheTo(0);  // inodes still in use (open, or in a dentry) stay
  FlushCloses();   // the dropped inodes' handles, now
}

void GoferFilesystem::TrimCache() {
  TrimCacheTo(static_cast<int64_t>(opts_.max_cached_inodes));
}

void GoferFilesystem::TrimCacheTo(int64_t max) {
  absl::MutexLock l(&trim_mu_);
  if (cached_order_.size() > 2 * opts_.max_cached_inodes + 64) {
    // Forget records of entries that are gone, and duplicates.
    absl::flat_hash_set<std::pair<const GoferDirectory*, std::string>> seen;
    std::deque<std::pair<std::weak_ptr<GoferDirectory>, std::string>> kept;
    for (auto& [weak, name] : cached_order_) {
      std::shared_ptr<GoferDirectory> dir = weak.lock();
      if (dir == nullptr || !dir->HasEntry(name)) continue;
      if (!seen.insert({dir.get(), name}).second) continue;
      kept.emplace_back(std::move(weak), std::move(name));
    }
    cached_order_.swap(kept);
  }
  // Each record is looked at once per trim: an entry still in use goes to
  // the back (it is hot), so the loop ends.
  for (size_t n = cached_order_.size();
       n > 0 && cached_entries_.load(std::memory_order_relaxed) > max; --n) {
    auto [weak, name] = std::move(cached_order_.front());
    cached_order_.pop_front();
    std::shared_ptr<GoferDirectory> dir = weak.lock();
    if (dir == nullptr) continue;
    if (!dir->EvictIfUnused(name)) {
      cached_order_.emplace_back(std::move(weak), std::move(name));
    }
  }
}

vfs::FsStats StatsFromGofer(const wire::StatfsResp& r) {
  vfs::FsStats st;
  st.type = kV9fsMagic;
  st.name_max = vfs::kNameMax;
  // No block size, or an absurd one: not a statfs; show no sizes.
  constexpr uint64_t kMaxBlockSize = uint64_t{1} << 30;
  if (r.bsize == 0 || r.bsize > kMaxBlockSize || r.frsize > kMaxBlockSize) {
    return st;
  }
  st.block_size = r.bsize;
  st.frsize = r.frsize != 0 ? r.frsize : r.bsize;
  st.blocks = r.blocks;
  st.blocks_free = std::min(r.bfree, r.blocks);
  st.blocks_avail = std::min(r.bavail, st.blocks_free);
  st.files = r.files;
  st.files_free = std::min(r.ffree, r.files);
  // Names longer than the protocol carries cannot be made here.
  if (r.namelen != 0)
    st.name_max = std::min<uint64_t>(r.namelen, wire::kMaxNameLen);
  return st;
}

vfs::FsStats GoferFilesystem::StatFs() {
  wire::StatfsResp r;
  if (!Call(wire::StatfsReq{root_handle_}, &r).ok()) {
    vfs::FsStats st;
    st.type = kV9fsMagic;
    st.name_max = vfs::kNameMax;
    return st;
  }
  return StatsFromGofer(r);
}

}  // namespace sandbox::fs::gofer
