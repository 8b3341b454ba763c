#include "sentry/boot/root_fs.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gofer/protocol/unique_fd.h"
#include "platform/host_fds.h"
#include "sentry/boot/seed.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/gofer/filesystem.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/synthetic.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/fs/tmpfs/filesystem_type.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/filesystem_type.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::boot {
namespace {

// mkdir -p `path` (absolute) as the sandbox's root user.
KResult<void> MkdirAll(const vfs::ResolveBase& base, const std::string& path) {
  for (size_t pos = 1; pos <= path.size();) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    if (slash > pos) {
      KResult<void> r = vfs::MkdirAt(base, path.substr(0, slash), 0755, 0);
      if (!r.ok() && r.error() != kEEXIST) return r.error();
    }
    pos = slash + 1;
  }
  return OkResult();
}

// Each Gofer mount's FD cache (fs::gofer::FdCache): an equal part of what
// the host FD budget leaves for file data (platform/host_fds.h), at most the
// file system's default.
size_t FileCacheShare(const BootSpec& spec) {
  const size_t mounts = 1 + spec.gofer_mounts.size();
  return std::clamp<size_t>(platform::HostFdBudget::FileCacheFds() / mounts, 8,
                            fs::gofer::Options{}.max_host_fds);
}

// Each Gofer mount's name cache (fs::gofer::Options::max_cached_inodes):
// half of the handles the Gofer allows a connection (gofer/gofer.cc sizes
// them from the same RLIMIT_NOFILE), so that open files have the rest.
size_t CachedInodeShare(const BootSpec& spec) {
  const size_t nofile = platform::HostFdBudget::limit() +
                        platform::HostFdBudget::FileCacheFds() +
                        platform::kUncountedHostFds;
  const size_t mounts = 1 + spec.gofer_mounts.size();
  const size_t handles = (nofile > 128 ? nofile - 64 : nofile / 2) / 2 / mounts;
  return std::clamp<size_t>(handles / 2, 16,
                            fs::gofer::Options{}.max_cached_inodes);
}

}  // namespace

void RegisterFilesystemTypes(kernel::Kernel& kernel) {
  std::unique_ptr<vfs::FilesystemType> types[] = {
      fs::sys::NewFilesystemType(),
      fs::tmpfs::NewFilesystemType(),
      std::make_unique<vfs::ListedFilesystemType>("devtmpfs"),
      fs::proc::NewFilesystemType(kernel),
      std::make_unique<vfs::ListedFilesystemType>("pipefs"),
      fs::devpts::NewFilesystemType(),
      std::make_unique<vfs::ListedFilesystemType>("9p"),
      std::make_unique<vfs::ListedFilesystemType>("overlay"),
  };
  for (auto& t : types) {
    // Distinct names: cannot fail.
    (void)kernel.filesystem_types().Register(std::move(t));
  }
}

KResult<RootFilesystem> MakeRootFilesystem(const BootSpec& spec,
                                           platform::MemoryFile& mf,
                                           std::string* why) {
  switch (spec.root) {
    case RootKind::kTmpfs:
      return RootFilesystem{
          fs::tmpfs::Filesystem::Create(mf, {.root_mode = 0755}), 0};
    case RootKind::kGofer:
    case RootKind::kGoferReadOnly: {
      fs::gofer::Options opts;
      opts.exclusive = true;  // Nothing else changes the sandbox's root.
      opts.read_only = true;  // Writes: EROFS (until an overlay is added).
      opts.memory_file = &mf;
      opts.max_host_fds = FileCacheShare(spec);
      opts.max_cached_inodes = CachedInodeShare(spec);
      opts.max_cached_inodes = CachedInodeShare(spec);
      KResult<std::shared_ptr<fs::gofer::GoferFilesystem>> gfs =
          fs::gofer::NewGoferFilesystem(::gofer::UniqueFd(spec.root_gofer_fd),
                                        opts);
      if (!gfs.ok()) {
        *why = absl::StrCat("cannot attach to the Gofer serving the root: ",
                            std::string(gfs.error().message()),
                            " (did the Gofer fail to start?)");
        return gfs.error();
      }
      if (spec.root == RootKind::kGoferReadOnly) {
        return RootFilesystem{*gfs, vfs::kMountReadOnly | vfs::kMountNoDev};
      }
      // The host's root read-only under a tmpfs upper layer
      // (sentry/fs/overlay): the sandbox's writes stay in its memory.
      std::shared_ptr<vfs::Mount> lower =
          vfs::Mount::Create(*gfs, (*gfs)->root(), vfs::kMountReadOnly);
      KResult<std::shared_ptr<fs::overlay::OverlayFilesystem>> ovl =
          fs::overlay::OverlayFilesystem::Create(
              {.lower = {lower, lower->root()},
               .upper = fs::tmpfs::Filesystem::Create(mf),
               // Its caches pin lower inodes, which the Gofer client's
               // eviction cannot take back: half of the client's bound.
               .max_cached_names = std::clamp<size_t>(
                   CachedInodeShare(spec) / 2, 16,
                   fs::overlay::Options{}.max_cached_names)});
      if (!ovl.ok()) {
        *why = absl::StrCat("cannot make the overlay root: ",
                            std::string(ovl.error().message()));
        return ovl.error();
      }
      return RootFilesystem{*ovl, vfs::kMountNoDev};
    }
  }
  *why = "unknown root kind";
  return kEINVAL;
}

KResult<std::shared_ptr<vfs::MountNamespace>> MakeRootNamespace(
    const BootSpec& spec, kernel::Kernel& kernel, platform::MemoryFile& mf,
    std::string* why) {
  // Owned now, so that every one is closed whatever fails below.
  std::vector<::gofer::UniqueFd> mount_fds;
  for (const GoferMount& m : spec.gofer_mounts) mount_fds.emplace_back(m.fd);
  std::vector<::gofer::UniqueFd> seed_fds;
  for (const SeedEntry& e : spec.seed) {
    if (e.host_fd > 2) seed_fds.emplace_back(e.host_fd);
  }

  TRY(RootFilesystem root, MakeRootFilesystem(spec, mf, why));
  std::shared_ptr<vfs::MountNamespace> ns =
      vfs::MountNamespace::Create(std::move(root.fs), root.mount_flags);
  // /dev, /proc and /sys before the seed, whose /dev/shm tmpfs goes on
  // /dev.
  if (KResult<void> r = fs::MountSynthetic(kernel, *ns); !r.ok()) {
    *why = absl::StrCat("cannot mount /dev, /proc, /sys: ",
                        std::string(r.error().message()));
    return r.error();
  }
  if (KResult<void> r = fs::devpts::MountDefault(*ns); !r.ok()) {
    *why = absl::StrCat("cannot mount /dev/pts: ",
                        std::string(r.error().message()));
    return r.error();
  }
  {
    std::string seed_why;
    KResult<void> seeded = ApplySeed(*ns, mf, spec.seed, &seed_why);
    seed_fds.clear();
    if (!seeded.ok()) {
      *why = "cannot set up the root file system: " + seed_why;
      return seeded.error();
    }
  }

  const kernel::Credentials creds = kernel::Credentials::Root();
  vfs::ResolveBase base{creds, ns->Root(), ns->Root()};
  for (size_t i = 0; i < spec.gofer_mounts.size(); ++i) {
    const GoferMount& m = spec.gofer_mounts[i];
    fs::gofer::Options opts;
    opts.exclusive = !m.shared;
    opts.read_only = m.read_only;
    opts.host_sockets = m.host_sockets;
    opts.memory_file = &mf;
    opts.max_host_fds = FileCacheShare(spec);
    KResult<std::shared_ptr<fs::gofer::GoferFilesystem>> gfs =
        fs::gofer::NewGoferFilesystem(std::move(mount_fds[i]), opts);
    if (!gfs.ok()) {
      *why = absl::StrCat("cannot attach to the Gofer serving ", m.path, ": ",
                          std::string(gfs.error().message()));
      return gfs.error();
    }
    if (KResult<void> r = MkdirAll(base, m.path); !r.ok()) {
      *why = absl::StrCat("cannot make the mount point ", m.path, ": ",
                          std::string(r.error().message()));
      return r.error();
    }
    KResult<vfs::VirtualDentry> point =
        vfs::Resolve(base, m.path, vfs::ResolveOptions{.must_be_dir = true});
    KResult<std::shared_ptr<vfs::Mount>> mounted =
        point.ok()
            ? ns->MountAt(*point, *gfs,
                          ((*gfs)->read_only() ? vfs::kMountReadOnly : 0) |
                              (m.suid ? 0 : vfs::kMountNoSuid) |
                              vfs::kMountNoDev)
            : KResult<std::shared_ptr<vfs::Mount>>(point.error());
    if (!mounted.ok()) {
      *why = absl::StrCat("cannot mount ", m.path, ": ",
                          std::string(mounted.error().message()));
      return mounted.error();
    }
  }
  // Locked as Linux locks mounts inherited into a less privileged mount
  // namespace: the guest (root, CAP_SYS_ADMIN inside) cannot unmount,
  // move or plainly re-bind them to see what lies under them (the host's
  // /tmp under the sandbox's), nor clear their nodev/nosuid/ro.
  ns->root_mount()->LockTree();
  return ns;
}

}  // namespace sandbox::boot
