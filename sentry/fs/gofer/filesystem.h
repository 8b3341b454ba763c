// The gofer file system: the Sentry's client of one Gofer connection
// (docs/gofer-protocol.md), as a vfs::Filesystem.
//
// Caching (Options::exclusive, the default: the sandbox's root is its own):
// nothing on the host changes behind the Sentry's back, so attributes,
// names (positive and negative) and symlink targets are cached without
// revalidation; a cached stat or lookup makes no Gofer call. With
// exclusive = false (bind mounts marked shared) stat asks the host each
// time, lookups walk again and readlink reads again.
//
// Inodes: one GoferInode per host file (keyed by host dev and ino, so hard
// links share it), each holding one Gofer handle, released (batched Close)
// when the inode dies. Directories keep their looked-up children alive
// (the dentry cache of this file system: the VFS's own cache is weak) up to
// max_cached_inodes, past which unused entries are dropped.
//
// File data never crosses the socket: regular files read and write the
// donated host FDs (pread/pwrite), one per inode and access mode, under the
// FdCache budget (fd_cache.h).
//
// Gofer replies are hostile input: every failure the client reports
// (EPROTO/EPIPE: a reply that did not decode or fit), any errno outside
// Linux's range, and any reply that makes no sense here (a file type that
// does not exist, a name with '/', a handle reused for another type) is EIO
// for the caller; the Sentry never trusts or crashes on it.
//
// Lock order (beside vfs/inode.h's):
//   Filesystem::tree_mu_
//     GoferDirectory::children_mu_
//     Inode::mu_
//   GoferFilesystem::inodes_mu_, close_mu_, FdCache::mu_ (leaves)
//   ::gofer::GoferClient::mu_ (leaf; Gofer calls are made holding at most
//   tree_mu_ and, for appends, GoferRegularFile::append_mu_)
#ifndef SENTRY_FS_GOFER_FILESYSTEM_H_
#define SENTRY_FS_GOFER_FILESYSTEM_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "gofer/protocol/client.h"
#include "platform/memory_file.h"
#include "platform/timed_stat.h"
#include "sentry/base/result.h"
#include "sentry/fs/gofer/fd_cache.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/host_socket.h"

namespace sandbox::fs::gofer {

namespace wire = ::gofer;

// Process-wide: Gofer calls of every gofer file system by message type, and
// the time the callers waited for them (start-up profiling: `runsc do
// --strace-summary`).
struct CallStats {
  platform::TimedStat all;  // nanoseconds
  platform::TimedStat by_type[wire::kMaxMessageType + 1];
};
CallStats& GoferCallStats();
// "gofer: N calls, T ms waited (max M us); walk N T ms, ..." for the strace
// summary.
std::string GoferStatsSummary();
// Counts one call of `type` in GoferCallStats, timed from construction to
// destruction.
class CallTimer {
 public:
  explicit CallTimer(wire::MessageType type);
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  const uint16_t type_;
  const int64_t start_ns_;
};

inline constexpr uint64_t kV9fsMagic = 0x01021997;  // V9FS_MAGIC

// statfs of a Gofer mount from the Gofer's fstatfs of the host file system
// (f_type V9FS_MAGIC, as Linux's 9p client). The reply is hostile input:
// one without a sane block size (0, or above 1 GiB) shows no sizes; free
// counts above their totals are cut to them (f_bavail <= f_bfree <=
// f_blocks, f_ffree <= f_files); f_namelen is at most NAME_MAX (no longer
// name crosses the protocol).
vfs::FsStats StatsFromGofer(const wire::StatfsResp& r);

// How exclusive mounts list directories (directory.h).
enum class ListingMode {
  // Getdents, switching a directory to GetdentsPlus when a walker (a
  // lookup after a listing) shows up, as Linux's NFS client.
  kAdaptive,
  // GetdentsPlus for every listing (tests, comparisons).
  kAlwaysPlus,
};

struct Options {
  // The tree is exclusive to this sandbox: cache without revalidation.
  bool exclusive = true;
  // Refuse every change (EROFS). Also set when the Gofer says it serves the
  // tree read-only; mount it MS_RDONLY too so the VFS orders errors as
  // Linux does.
  bool read_only = false;
  // Host FDs for file data (the process limit here is 20000).
  size_t max_host_fds = 10000;
  // Cached inodes (each holds a Gofer handle; the Gofer allows 16384).
  size_t max_cached_inodes = 8192;
  // The memory file that holds the page cache of mmapped files; null:
  // mmap of this file system's files fails (ENODEV). Must outlive the file
  // system.
  platform::MemoryFile* memory_file = nullptr;
  // Give new files the creator's uid/gid (the Gofer chowns them); false
  // leaves the Gofer's own.
  bool set_owner = true;
  // Exclusive read-only mounts (the sandbox's root) keep the whole content
  // of regular files up to this size in the Sentry after their first read,
  // so later reads make no host syscall (regular_file.h: "Small files").
  size_t max_cached_file_size = 32 << 10;
  // The total of those contents; past it, files are read from the host.
  size_t max_cached_file_bytes = 64 << 20;
  ListingMode listing = ListingMode::kAdaptive;
  // Host Unix sockets (runsc do --bind=...:uds): bind(2) in this tree makes
  // a host socket through the Gofer's BindSocket, connect(2) to a host
  // socket node here asks its ConnectSocket (host_sockets() is this file
  // system). The Gofer refuses both on connections not served so.
  bool host_sockets = false;
};

class GoferDirectory;
class GoferInode;

// Calls retried once after RelieveFdPressure when they fail for want of
// descriptors: those that change nothing on the host (a failed Create may
// have created its file before its FD was lost).
template <typename Req>
inline constexpr bool kRetriedUnderFdPressure =
    std::is_same_v<Req, wire::WalkReq> ||
    std::is_same_v<Req, wire::WalkStatReq> ||
    std::is_same_v<Req, wire::OpenReq> || std::is_same_v<Req, wire::StatReq> ||
    std::is_same_v<Req, wire::GetdentsReq> ||
    std::is_same_v<Req, wire::GetdentsPlusReq> ||
    std::is_same_v<Req, wire::ReadlinkReq>;

class GoferFilesystem final : public vfs::Filesystem, public vfs::HostSockets {
 public:
  // Attaches to the Gofer on `client`'s connection. EIO if the Gofer's
  // reply is unusable.
  static KResult<std::shared_ptr<GoferFilesystem>> Create(
      std::unique_ptr<wire::GoferClient> client, const Options& opts);
  ~GoferFilesystem() override;

  std::string_view type_name() const override { return "9p"; }
  std::shared_ptr<vfs::Dentry> root() const override { return root_; }
  // Exclusive mounts keep recently used dentries (as tmpfs does), so a
  // repeated walk of a cached path allocates nothing and does not ask the
  // directories' name caches again. Shared mounts keep none: their
  // dentries live only while used, and a new walk looks names up again.
  vfs::DentryCache* dentry_cache() override {
    return opts_.exclusive ? &dcache_ : nullptr;
  }
  // The host's statfs of the served tree (one Gofer call), f_type V9FS.
  vfs::FsStats StatFs() override;
  // This file system when Options::host_sockets, else null.
  vfs::HostSockets* host_sockets() override {
    return opts_.host_sockets ? this : nullptr;
  }
  // vfs::HostSockets: BindSocket and ConnectSocket of the Gofer.
  KResult<vfs::HostSocketBinding> BindSocket(vfs::Inode& dir,
                                             std::string_view name,
                                             const vfs::NewInodeAttrs& attrs,
                                             int type) override;
  KResult<vfs::OwnedFd> ConnectSocket(vfs::Inode& node, int type) override;

  const Options& options() const { return opts_; }
  bool exclusive() const { return opts_.exclusive; }
  bool read_only() const { return opts_.read_only; }
  FdCache& fd_cache() { return fd_cache_; }

  // Whether small files' data is kept in the Sentry: only where nothing
  // can change it, neither the host (exclusive) nor the Sentry (read-only).
  bool caches_file_data() const { return opts_.exclusive && opts_.read_only; }
  // Takes `n` bytes of the max_cached_file_bytes budget; false if that
  // would go past it (nothing is taken then).
  bool ReserveFileData(size_t n);
  void ReleaseFileData(size_t n) {
    file_data_bytes_.fetch_sub(n, std::memory_order_relaxed);
  }
  // Bytes of small files' data held now (tests).
  size_t file_data_bytes() const {
    return file_data_bytes_.load(std::memory_order_relaxed);
  }

  // Every Gofer call goes through here: counts it, times it (CallStats)
  // and maps its error (see MapError).
  template <typename Req>
  KResult<void> Call(const Req& req, typename wire::Rpc<Req>::Reply* resp,
                     wire::UniqueFd* fd = nullptr) {
    rpcs_.fetch_add(1, std::memory_order_relaxed);
    CallTimer timer(wire::Rpc<Req>::kType);
    if constexpr (std::is_same_v<Req, wire::WalkReq>) {
      calls_.walk.fetch_add(1, std::memory_order_relaxed);
    } else if constexpr (std::is_same_v<Req, wire::GetdentsReq>) {
      calls_.getdents.fetch_add(1, std::memory_order_relaxed);
    } else if constexpr (std::is_same_v<Req, wire::GetdentsPlusReq>) {
      calls_.getdents_plus.fetch_add(1, std::memory_order_relaxed);
    }
    int err = client_->Call(req, resp, fd);
    if constexpr (kRetriedUnderFdPressure<Req>) {
      if (err == EMFILE || err == ENFILE) {
        // Out of descriptors, here (the reply's FD did not fit) or in the
        // Gofer (its handles or its host FDs): give back what the caches
        // hold and try once more. Only this call fails if that is not
        // enough (EMFILE/ENFILE to the guest).
        RelieveFdPressure();
        err = client_->Call(req, resp, fd);
      }
    }
    if (err == 0) return OkResult();
    return MapError(err);
  }
  // Gives back host resources the caches hold: the batched Closes, every
  // cached FD no I/O uses, and the unused entries of the name cache (their
  // inodes' Gofer handles). Cached data comes back on demand (a later open
  // or lookup asks the Gofer again). Counted in fd_pressure_events().
  void RelieveFdPressure() ABSL_LOCKS_EXCLUDED(trim_mu_, close_mu_);
  uint64_t fd_pressure_events() const {
    return fd_pressure_.load(std::memory_order_relaxed);
  }
  // Gofer calls made so far (tests: a cached operation makes none).
  uint64_t rpc_count() const { return rpcs_.load(std::memory_order_relaxed); }
  // Of which Walk, Getdents and GetdentsPlus calls (tests, benchmarks).
  struct CallCounts {
    std::atomic<uint64_t> walk{0}, getdents{0}, getdents_plus{0};
  };
  CallCounts& calls() { return calls_; }

  // A Gofer errno as the caller sees it: Linux errnos pass, but EMFILE (the
  // Gofer's handles or host FDs are exhausted) is ENFILE; a broken
  // connection (EPROTO, EPIPE) and anything outside 1..133 is EIO.
  static Errno MapError(uint32_t err);

  // The inode for a walked or created file: the live one for its (dev,
  // ino) if any (the new handle is then released), else a new one.
  // EIO for a type
  // that does not exist or that differs from the live inode's.
  KResult<std::shared_ptr<GoferInode>> InodeFor(const wire::Inode& wi);

  // Whether to list with GetdentsPlus (until the Gofer says EOPNOTSUPP).
  bool getdents_plus() const {
    return getdents_plus_.load(std::memory_order_relaxed);
  }
  void DisableGetdentsPlus() {
    getdents_plus_.store(false, std::memory_order_relaxed);
  }

  // Called by dying inodes.
  void ReleaseHandle(wire::Handle h) ABSL_LOCKS_EXCLUDED(close_mu_);
  void ForgetInode(uint64_t dev, uint64_t ino, const GoferInode* inode)
      ABSL_LOCKS_EXCLUDED(inodes_mu_);
  // Sends the batched Close now.
  void FlushCloses() ABSL_LOCKS_EXCLUDED(close_mu_);

  // Cached directory entries (positive and negative) across the tree, for
  // the max_cached_inodes bound (directory.cc).
  std::atomic<int64_t>& cached_entries() { return cached_entries_; }
  // Records that `dir` cached `name` (oldest first, for TrimCache).
  void NoteCached(const std::shared_ptr<GoferDirectory>& dir, std::string name)
      ABSL_LOCKS_EXCLUDED(trim_mu_);
  // Drops the oldest unused entries while over max_cached_inodes (or, with
  // `max` given, over that many). Called without children_mu_ held.
  void TrimCache() ABSL_LOCKS_EXCLUDED(trim_mu_);
  void TrimCacheTo(int64_t max) ABSL_LOCKS_EXCLUDED(trim_mu_);

 private:
  GoferFilesystem(std::unique_ptr<wire::GoferClient> client,
                  const Options& opts);

  static constexpr size_t kCloseBatch = 64;

  const std::unique_ptr<wire::GoferClient> client_;
  Options opts_;
  FdCache fd_cache_;
  std::atomic<uint64_t> rpcs_{0};
  std::atomic<uint64_t> fd_pressure_{0};
  CallCounts calls_;
  std::atomic<size_t> file_data_bytes_{0};
  std::atomic<int64_t> cached_entries_{0};
  std::atomic<bool> getdents_plus_{true};
  wire::Handle root_handle_ = 0;  // set once by Create
  std::shared_ptr<vfs::Dentry> root_;
  // Its dentries hold inodes (so Gofer handles): a quarter of
  // max_cached_inodes, so that with the name cache's bound (which cannot
  // drop entries these use) the handles stay well below the Gofer's
  // limit (16384 by default).
  vfs::DentryCache dcache_;

  absl::Mutex inodes_mu_;
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, std::weak_ptr<GoferInode>>
      inodes_ ABSL_GUARDED_BY(inodes_mu_);

  // Insertion order of cached entries; may hold records of entries that
  // are gone (skipped when reached). Lock order: trim_mu_ before
  // GoferDirectory::children_mu_.
  absl::Mutex trim_mu_;
  std::deque<std::pair<std::weak_ptr<GoferDirectory>, std::string>>
      cached_order_ ABSL_GUARDED_BY(trim_mu_);

  absl::Mutex close_mu_;
  std::vector<wire::Handle> pending_close_ ABSL_GUARDED_BY(close_mu_);
};

// The gofer file system over a connected Gofer socket (owned from now on).
KResult<std::shared_ptr<GoferFilesystem>> NewGoferFilesystem(
    wire::UniqueFd sock, const Options& opts = {});

// Converts a host stat's time.
inline abi::Timespec ToTimespec(const wire::Timespec& t) {
  return {t.sec, static_cast<int64_t>(t.nsec)};
}

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_FILESYSTEM_H_
