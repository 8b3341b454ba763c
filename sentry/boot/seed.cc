#include "sentry/boot/seed.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/operations.h"

namespace sandbox::boot {
namespace {

// mkdir -p of every proper prefix of `path` (or of `path` too if
// `including_last`).
KResult<void> MkdirParents(const vfs::ResolveBase& base,
                           const std::string& path, bool including_last) {
  size_t pos = 1;
  for (;;) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) {
      if (!including_last || pos >= path.size()) return OkResult();
      slash = path.size();
    }
    if (slash > pos) {
      KResult<void> r = vfs::MkdirAt(base, path.substr(0, slash), 0755, 0);
      if (!r.ok() && r.error() != kEEXIST) return r.error();
    }
    if (slash == path.size()) return OkResult();
    pos = slash + 1;
  }
}

// The entry's owner, then its exact mode (chown may drop set-id bits).
KResult<void> SetOwnerAndMode(const vfs::ResolveBase& base,
                              const SeedEntry& e) {
  TRY_VOID(vfs::ChownAt(base, e.path, e.uid, e.gid, 0));
  return vfs::ChmodAt(base, e.path, e.mode & 07777, 0);
}

// Copies the host file `fd` into `file`.
KResult<void> CopyHostFile(int fd, vfs::FileDescription& file) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Errno(errno);
  if (!S_ISREG(st.st_mode)) return kEINVAL;
  if (static_cast<uint64_t>(st.st_size) > kMaxSeedFileSize) return kEFBIG;
  std::vector<uint8_t> buf(1 << 20);
  vfs::IoContext ctx;
  uint64_t off = 0;
  for (;;) {
    ssize_t n = pread(fd, buf.data(), buf.size(), static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(errno);
    if (n == 0) return OkResult();
    off += static_cast<uint64_t>(n);
    if (off > kMaxSeedFileSize) return kEFBIG;  // grew meanwhile
    size_t done = 0;
    while (done < static_cast<size_t>(n)) {
      TRY(size_t w,
          file.Write(ctx, absl::MakeConstSpan(buf.data() + done, n - done)));
      if (w == 0) return kENOSPC;
      done += w;
    }
  }
}

KResult<void> ApplyOne(vfs::MountNamespace& ns, platform::MemoryFile& mf,
                       const vfs::ResolveBase& base, const SeedEntry& e,
                       std::string* step) {
  if (e.path.empty() || e.path[0] != '/') {
    *step = "not an absolute path";
    return kEINVAL;
  }
  switch (e.kind) {
    case SeedEntry::kTmpfsMount: {
      *step = "mount point";
      TRY_VOID(MkdirParents(base, e.path, /*including_last=*/true));
      TRY(vfs::VirtualDentry point,
          vfs::Resolve(base, e.path, vfs::ResolveOptions{}));
      *step = "mount";
      fs::tmpfs::Options opts;
      opts.root_mode = e.mode & 07777;
      opts.root_uid = e.uid;
      opts.root_gid = e.gid;
      TRY_VOID(ns.MountAt(point, fs::tmpfs::Filesystem::Create(mf, opts), 0));
      return OkResult();
    }
    case SeedEntry::kDir:
      *step = "mkdir";
      TRY_VOID(MkdirParents(base, e.path, /*including_last=*/true));
      *step = "chown/chmod";
      return SetOwnerAndMode(base, e);
    case SeedEntry::kFile: {
      *step = "parent directories";
      TRY_VOID(MkdirParents(base, e.path, /*including_last=*/false));
      *step = "create";
      TRY(std::shared_ptr<vfs::VfsFile> f,
          vfs::OpenAt(base, e.path, O_CREAT | O_WRONLY | O_TRUNC, 0600, 0));
      *step = "copy from the host";
      TRY_VOID(CopyHostFile(e.host_fd, *f));
      *step = "chown/chmod";
      return SetOwnerAndMode(base, e);
    }
  }
  *step = "unknown kind";
  return kEINVAL;
}

}  // namespace

KResult<void> ApplySeed(vfs::MountNamespace& ns, platform::MemoryFile& mf,
                        const std::vector<SeedEntry>& seed, std::string* why) {
  const kernel::Credentials root = kernel::Credentials::Root();
  vfs::ResolveBase base{root, ns.Root(), ns.Root()};
  for (const SeedEntry& e : seed) {
    std::string step;
    KResult<void> r = ApplyOne(ns, mf, base, e, &step);
    if (!r.ok()) {
      *why = absl::StrCat(e.path, ": ", step, ": ",
                          std::string(r.error().message()));
      return r.error();
    }
  }
  return OkResult();
}

}  // namespace sandbox::boot
