#include "sentry/fs/gofer/directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <atomic>
#include <limits>
#include <vector>

#include "sentry/fs/gofer/regular_file.h"

namespace sandbox::fs::gofer {
namespace {

constexpr int64_t kCookieBase = 2;  // offsets 0 and 1 are "." and ".."
constexpr uint64_t kMaxCookie =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// Entries per Getdents call. 512 of the largest entries fit in a reply
// (1 MiB), so the Gofer sends fewer only at the end of the directory
// (docs/gofer-protocol.md, Getdents).
constexpr uint32_t kDirentBatch = 512;

int64_t OffsetOfCookie(uint64_t cookie) {
  if (cookie > kMaxCookie - kCookieBase) return kMaxCookie;
  return static_cast<int64_t>(cookie) + kCookieBase;
}

uint64_t CookieOfOffset(int64_t offset) {
  if (offset == static_cast<int64_t>(kMaxCookie)) return kMaxCookie;
  return static_cast<uint64_t>(offset - kCookieBase);
}

// A name the host could have in a directory.
bool ValidName(std::string_view name) {
  return !name.empty() && name.size() <= vfs::kNameMax && name != "." &&
         name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

uint8_t ValidDirentType(uint8_t t) {
  switch (t) {
    case DT_FIFO:
    case DT_CHR:
    case DT_DIR:
    case DT_BLK:
    case DT_REG:
    case DT_LNK:
    case DT_SOCK:
      return t;
    default:
      return DT_UNKNOWN;
  }
}

}  // namespace

GoferDirectory::~GoferDirectory() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // No other reference exists: the entries go with us.
  gfs().cached_entries().fetch_sub(static_cast<int64_t>(children_.size()),
                                   std::memory_order_relaxed);
}

uint32_t GoferDirectory::OwnerId(uint32_t id) const {
  return gfs().options().set_owner ? id : wire::kNoId;
}

void GoferDirectory::Put(std::string_view name,
                         std::shared_ptr<GoferInode> inode) {
  if (!gfs().exclusive()) return;
  std::shared_ptr<GoferInode> old;  // released after unlocking
  {
    absl::MutexLock l(&children_mu_);
    auto [it, inserted] = children_.try_emplace(std::string(name), inode);
    if (!inserted) {
      old = std::move(it->second);
      it->second = std::move(inode);
    } else {
      gfs().cached_entries().fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (std::shared_ptr<GoferDirectory> self =
          std::static_pointer_cast<GoferDirectory>(shared_from_this())) {
    gfs().NoteCached(self, std::string(name));
  }
}

GoferDirectory::Entry GoferDirectory::Take(std::string_view name) {
  absl::MutexLock l(&children_mu_);
  auto it = children_.find(absl::string_view(name.data(), name.size()));
  if (it == children_.end()) return {};
  Entry e{true, std::move(it->second)};
  children_.erase(it);
  gfs().cached_entries().fetch_sub(1, std::memory_order_relaxed);
  return e;
}

bool GoferDirectory::EvictIfUnused(const std::string& name) {
  std::shared_ptr<GoferInode> victim;  // released after unlocking
  absl::MutexLock l(&children_mu_);
  auto it = children_.find(name);
  if (it == children_.end()) return true;
  if (it->second != nullptr && it->second.use_count() > 1) return false;
  victim = std::move(it->second);
  children_.erase(it);
  gfs().cached_entries().fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool GoferDirectory::HasEntry(const std::string& name) {
  absl::ReaderMutexLock l(&children_mu_);
  return children_.contains(name);
}

namespace {
// Inode numbers of mount-point placeholders: above any host's.
std::atomic<uint64_t> next_mount_point_ino{uint64_t{1} << 62};
}  // namespace

GoferMountPoint::GoferMountPoint(vfs::Filesystem& fs)
    : vfs::Inode(fs, next_mount_point_ino.fetch_add(1),
                 vfs::NewInodeAttrs{S_IFDIR | 0755, 0, 0, 0}) {}

KResult<std::shared_ptr<vfs::Inode>> GoferDirectory::Lookup(
    std::string_view name) {
  if (gfs().exclusive()) {
    // Shared: concurrent lookups in one directory do not contend.
    absl::ReaderMutexLock l(&children_mu_);
    // Heterogeneous (absl::string_view here is not std::string_view): no
    // allocation.
    auto it = children_.find(absl::string_view(name.data(), name.size()));
    if (it != children_.end()) {
      if (it->second == nullptr) return kENOENT;
      return std::shared_ptr<vfs::Inode>(it->second);
    }
  }
  wire::WalkResp resp;
  TRY_VOID(gfs().Call(wire::WalkReq{handle(), {std::string(name)}}, &resp));
  if (resp.status == wire::WalkStatus::kError &&
      (resp.error == EMFILE || resp.error == ENFILE)) {
    // The Gofer is out of handles or host FDs: give back what the caches
    // hold and walk once more (GoferFilesystem::Call does the same for
    // errors in the reply header).
    gfs().RelieveFdPressure();
    resp = {};
    TRY_VOID(gfs().Call(wire::WalkReq{handle(), {std::string(name)}}, &resp));
  }
  if (resp.status == wire::WalkStatus::kError) {
    if (resp.error == 0) return kEIO;
    Errno e = GoferFilesystem::MapError(resp.error);
    if (e == kENOENT) Put(name, nullptr);
    // A mount point the Gofer does not cross: an empty directory here.
    if (e == Errno(EXDEV)) return std::make_shared<GoferMountPoint>(fs());
    return e;
  }
  if (resp.inodes.size() != 1) {
    for (const wire::Inode& wi : resp.inodes) gfs().ReleaseHandle(wi.handle);
    return kEIO;
  }
  TRY(std::shared_ptr<GoferInode> inode, gfs().InodeFor(resp.inodes[0]));
  Put(name, inode);
  if (gfs().exclusive()) {
    // A name walked after a plain listing of this directory. The second
    // such walk is a walker's (ls -l, find, nftw): GetdentsPlus from now
    // on, and the listed entries fetched again with their inodes (one
    // listing instead of a Walk each). One walk alone is often not (ls,
    // then cat one file).
    if (plain_listed_.load(std::memory_order_relaxed) &&
        walks_after_listing_.fetch_add(1, std::memory_order_relaxed) + 1 >=
            kWalkerWalks &&
        plain_listed_.exchange(false, std::memory_order_relaxed)) {
      plus_.store(true, std::memory_order_relaxed);
      prefetch_cookie_.store(0, std::memory_order_relaxed);
    }
    // The next part of the prefetch, if one is under way (a walker that
    // got past the part fetched so far).
    PrefetchPlus();
  }
  Inherit(*inode);
  gfs().TrimCache();
  return std::shared_ptr<vfs::Inode>(std::move(inode));
}

KResult<std::shared_ptr<vfs::Inode>> GoferDirectory::CreateChild(
    std::string_view name, const vfs::NewInodeAttrs& attrs,
    std::string_view symlink_target) {
  if (gfs().read_only()) return kEROFS;
  const uint32_t type = attrs.mode & S_IFMT;
  const uint32_t uid = OwnerId(attrs.uid), gid = OwnerId(attrs.gid);
  wire::InodeResp resp;
  wire::UniqueFd fd;
  std::string n(name);
  switch (type) {
    case S_IFREG:
      // Opened read-write, so that the open that follows (O_CREAT) finds
      // its FD cached whatever its access mode.
      TRY_VOID(gfs().Call(
          wire::CreateReq{handle(), n, O_RDWR, attrs.mode & 07777, uid, gid},
          &resp, &fd));
      break;
    case S_IFDIR:
      TRY_VOID(gfs().Call(
          wire::MkdirReq{handle(), n, attrs.mode & 07777, uid, gid}, &resp));
      break;
    case S_IFLNK:
      TRY_VOID(gfs().Call(
          wire::SymlinkReq{handle(), n, std::string(symlink_target), uid, gid},
          &resp));
      break;
    default:  // FIFOs, sockets; devices: the Gofer's EPERM
      TRY_VOID(
          gfs().Call(wire::MknodReq{handle(), n, attrs.mode, uid, gid}, &resp));
      break;
  }
  MarkStale();  // mtime, ctime, nlink
  ForgetEnd();
  if ((resp.inode.stat.mode & S_IFMT) != type) {
    gfs().ReleaseHandle(resp.inode.handle);
    return kEIO;
  }
  TRY(std::shared_ptr<GoferInode> inode, gfs().InodeFor(resp.inode));
  if (fd.valid() && inode->IsRegular()) {
    static_cast<GoferRegularFile&>(*inode).AdoptFd(O_RDWR, std::move(fd));
  }
  Put(name, inode);
  return std::shared_ptr<vfs::Inode>(std::move(inode));
}

KResult<std::shared_ptr<vfs::Inode>> GoferDirectory::BindSocketChild(
    std::string_view name, const vfs::NewInodeAttrs& attrs, int type,
    wire::UniqueFd* fd) {
  if (gfs().read_only()) return kEROFS;
  wire::InodeResp resp;
  TRY_VOID(gfs().Call(
      wire::BindSocketReq{handle(), std::string(name),
                          static_cast<uint32_t>(type), attrs.mode & 0777,
                          OwnerId(attrs.uid), OwnerId(attrs.gid)},
      &resp, fd));
  MarkStale();  // mtime, ctime
  ForgetEnd();
  // ReplyFits checked S_IFSOCK; the inode must be one too (a live inode of
  // another type for that (dev, ino) is EIO in InodeFor).
  TRY(std::shared_ptr<GoferInode> inode, gfs().InodeFor(resp.inode));
  if (inode->type() != S_IFSOCK) return kEIO;
  Put(name, inode);
  return std::shared_ptr<vfs::Inode>(std::move(inode));
}

KResult<void> GoferDirectory::LinkChild(
    std::string_view name, const std::shared_ptr<vfs::Inode>& target) {
  if (gfs().read_only()) return kEROFS;
  // A mount-point placeholder (no Gofer handle) is not a host file here.
  auto* tp = dynamic_cast<GoferInode*>(target.get());
  if (tp == nullptr) return kEXDEV;
  auto& t = *tp;
  wire::InodeResp resp;
  TRY_VOID(gfs().Call(wire::LinkReq{handle(), std::string(name), t.handle()},
                      &resp));
  MarkStale();
  ForgetEnd();
  TRY(std::shared_ptr<GoferInode> inode, gfs().InodeFor(resp.inode));
  // The new name must be the same file.
  if (inode.get() != &t) return kEIO;
  Put(name, std::move(inode));
  return OkResult();
}

KResult<void> GoferDirectory::RemoveChild(std::string_view name,
                                          vfs::Inode& child) {
  if (gfs().read_only()) return kEROFS;
  wire::Empty e;
  TRY_VOID(gfs().Call(
      wire::UnlinkReq{handle(), std::string(name),
                      child.IsDir() ? static_cast<uint32_t>(AT_REMOVEDIR) : 0},
      &e));
  Entry old = Take(name);
  Put(name, nullptr);
  if (auto* c = dynamic_cast<GoferInode*>(&child)) c->MarkStale();  // nlink
  MarkStale();
  ForgetEnd();
  return OkResult();
}

KResult<void> GoferDirectory::RenameChild(std::string_view old_name,
                                          vfs::Inode& new_dir_inode,
                                          std::string_view new_name,
                                          uint32_t flags) {
  if (gfs().read_only()) return kEROFS;
  // Into a mount-point placeholder (a host mount the Gofer does not
  // cross: Linux's rename there crosses mounts): EXDEV, never a cast of
  // an inode without a Gofer handle.
  auto* nd = dynamic_cast<GoferDirectory*>(&new_dir_inode);
  if (nd == nullptr) return kEXDEV;
  auto& new_dir = *nd;
  wire::Empty e;
  TRY_VOID(gfs().Call(
      wire::RenameReq{handle(), std::string(old_name), new_dir.handle(),
                      std::string(new_name), flags},
      &e));
  MarkStale();
  new_dir.MarkStale();
  ForgetEnd();
  new_dir.ForgetEnd();
  Entry moved = Take(old_name);
  Entry other = new_dir.Take(new_name);
  for (Entry* en : {&moved, &other}) {
    if (en->inode != nullptr) en->inode->MarkStale();  // ctime, nlink
  }
  if (flags & RENAME_EXCHANGE) {
    if (moved.found) new_dir.Put(new_name, std::move(moved.inode));
    if (other.found) Put(old_name, std::move(other.inode));
  } else {
    if (moved.found) new_dir.Put(new_name, std::move(moved.inode));
    Put(old_name, nullptr);
  }
  return OkResult();
}

void GoferDirectory::Inherit(GoferInode& child) {
  if (!plus_.load(std::memory_order_relaxed) || !child.IsDir()) return;
  if (auto* dir = dynamic_cast<GoferDirectory*>(&child)) {
    dir->plus_.store(true, std::memory_order_relaxed);
  }
}

void GoferDirectory::CacheChild(const std::string& name,
                                const wire::Inode& wi) {
  {
    absl::MutexLock l(&children_mu_);
    auto it = children_.find(name);
    if (it != children_.end() && it->second != nullptr) {
      // Known already (exclusive: the cached inode is the truth).
      gfs().ReleaseHandle(wi.handle);
      Inherit(*it->second);  // atomics only
      return;
    }
  }
  // InodeFor releases the handle itself if it fails (a type that does not
  // exist, a known file with another type): the name is then not cached
  // and a lookup walks it (and fails) as before.
  KResult<std::shared_ptr<GoferInode>> inode = gfs().InodeFor(wi);
  if (inode.ok()) {
    Inherit(**inode);
    Put(name, std::move(inode).value());
  }
}

KResult<void> GoferDirectory::FetchDirents(uint64_t cookie, bool* plus,
                                           std::vector<wire::Dirent>* out) {
  if (*plus) {
    wire::GetdentsPlusResp resp;
    KResult<void> r = gfs().Call(
        wire::GetdentsPlusReq{handle(), cookie, kDirentBatch}, &resp);
    if (r.ok()) {
      bool bad = false;
      for (const wire::DirentPlus& d : resp.dirents) {
        if (!ValidName(d.name) || d.next_cookie > kMaxCookie) bad = true;
      }
      // Every handle of the reply is either given to an inode or released.
      if (bad) {
        for (const wire::DirentPlus& d : resp.dirents) {
          if (d.has_inode) gfs().ReleaseHandle(d.inode.handle);
        }
        return kEIO;
      }
      out->reserve(resp.dirents.size());
      for (wire::DirentPlus& d : resp.dirents) {
        if (d.has_inode) CacheChild(d.name, d.inode);
        out->push_back({d.ino, d.next_cookie, d.type, std::move(d.name)});
      }
      gfs().TrimCache();
      return OkResult();
    }
    // A Gofer without GetdentsPlus (protocol revision 0): plain Getdents
    // from now on.
    if (r.error() != kEOPNOTSUPP) return r.error();
    gfs().DisableGetdentsPlus();
    *plus = false;
  }
  wire::GetdentsResp resp;
  TRY_VOID(
      gfs().Call(wire::GetdentsReq{handle(), cookie, kDirentBatch}, &resp));
  *out = std::move(resp.dirents);
  return OkResult();
}

void GoferDirectory::PrefetchPlus() {
  // Claimed by one thread at a time; kNoPrefetch: none under way.
  uint64_t cookie =
      prefetch_cookie_.exchange(kNoPrefetch, std::memory_order_relaxed);
  if (cookie == kNoPrefetch) return;
  for (uint32_t seen = 0; seen < kPrefetchEntries;) {
    bool plus = gfs().getdents_plus();
    std::vector<wire::Dirent> batch;
    if (!plus || !FetchDirents(cookie, &plus, &batch).ok() || !plus) return;
    if (batch.size() < kDirentBatch ||
        OffsetOfCookie(batch.back().next_cookie) ==
            static_cast<int64_t>(kMaxCookie)) {
      // The whole directory is cached: later listings can be plain.
      plus_.store(false, std::memory_order_relaxed);
      return;
    }
    if (batch.back().next_cookie == cookie) return;  // EIO for a listing
    seen += static_cast<uint32_t>(batch.size());
    cookie = batch.back().next_cookie;
  }
  prefetch_cookie_.store(cookie, std::memory_order_relaxed);
}

bool GoferDirectory::UsePlus() const {
  if (!gfs().exclusive() || !gfs().getdents_plus()) return false;
  return gfs().options().listing == ListingMode::kAlwaysPlus ||
         plus_.load(std::memory_order_relaxed);
}

KResult<void> GoferDirectory::IterDirents(int64_t offset,
                                          vfs::DirentSink sink) {
  if (offset < kCookieBase) offset = kCookieBase;
  uint64_t cookie = CookieOfOffset(offset);
  if (cookie == 0) {
    // A listing from the start: walks after it are counted anew.
    walks_after_listing_.store(0, std::memory_order_relaxed);
    listing_all_plus_.store(true, std::memory_order_relaxed);
  }
  const bool exclusive = gfs().exclusive();
  for (;;) {
    // The end of the directory, as the last listing found it: nothing
    // changes an exclusive mount's directory behind the Sentry, whose own
    // changes forget it (a guest's last getdents64 makes no call).
    if (exclusive && cookie == end_cookie_.load(std::memory_order_relaxed)) {
      return OkResult();
    }
    // Per batch: a walker's lookup may switch the mode mid-listing.
    bool plus = UsePlus();
    std::vector<wire::Dirent> dirents;
    TRY_VOID(FetchDirents(cookie, &plus, &dirents));
    if (!plus && exclusive) {
      plain_listed_.store(true, std::memory_order_relaxed);
      listing_all_plus_.store(false, std::memory_order_relaxed);
    }
    // A short batch is the end (kDirentBatch).
    const bool end = dirents.size() < kDirentBatch ||
                     OffsetOfCookie(dirents.back().next_cookie) ==
                         static_cast<int64_t>(kMaxCookie);
    if (plus && end) {
      // The entries came with their inodes (those of plain batches of
      // this listing too, if a prefetch is under way): the next listing
      // can be plain (a walker that finds entries evicted switches it
      // back). A listing that was all GetdentsPlus needs no prefetch.
      plus_.store(false, std::memory_order_relaxed);
      if (listing_all_plus_.load(std::memory_order_relaxed)) {
        prefetch_cookie_.store(kNoPrefetch, std::memory_order_relaxed);
      }
    }
    if (dirents.empty()) {
      if (exclusive) end_cookie_.store(cookie, std::memory_order_relaxed);
      return OkResult();
    }
    for (const wire::Dirent& d : dirents) {
      if (!ValidName(d.name) || d.next_cookie > kMaxCookie) return kEIO;
    }
    const uint64_t next = dirents.back().next_cookie;
    // A cookie that does not move on would list the same entries forever.
    if (next == cookie) return kEIO;
    if (end && exclusive) {
      // As the guest will resume: an end marker resumes at INT64_MAX.
      end_cookie_.store(CookieOfOffset(OffsetOfCookie(next)),
                        std::memory_order_relaxed);
    }
    for (const wire::Dirent& d : dirents) {
      vfs::DirEntry de{d.name, d.ino, ValidDirentType(d.type),
                       OffsetOfCookie(d.next_cookie)};
      if (!sink(de)) return OkResult();
    }
    // The end-of-directory marker or a short batch ends the listing.
    if (end) return OkResult();
    cookie = next;
  }
}

}  // namespace sandbox::fs::gofer
