// mount(2), umount2(2) (Linux fs/namespace.c: path_mount, path_umount).
//
// What a root process in a container uses: new tmpfs, proc, sysfs and
// devpts instances; bind mounts (MS_BIND, MS_REC) of directories and files;
// MS_REMOUNT (per-mount flags; MS_REMOUNT|MS_BIND for a read-only bind);
// propagation types (recorded: there is one mount namespace); MS_MOVE;
// umount2 with MNT_FORCE, MNT_DETACH, MNT_EXPIRE and UMOUNT_NOFOLLOW.
// The sandbox's set-up mounts are locked (vfs::kLockMounted: Linux's
// MNT_LOCKED in a less privileged mount namespace): umount and MS_MOVE of
// them EINVAL, a plain bind of what they cover EINVAL, remounts that clear
// their flags EPERM. The
// mount tree and its locking are vfs::Mount's (sentry/vfs/mount.h).
#include "sentry/vfs/mount.h"

#include <sys/mount.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "sentry/abi/syscalls.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::syscalls {
namespace {

constexpr uint64_t kMsMgcMsk = 0xffff0000;
constexpr uint64_t kMsMgcVal = 0xc0ed0000;
constexpr uint64_t kMsNoUser = 1u << 31;
constexpr uint64_t kMsPropagation =
    MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE;
using abi::kPageSize;

// Resolves `path` from the task's cwd and root. Only the result holds a
// reference to its mount (umount counts the caller's references).
KResult<vfs::VirtualDentry> ResolvePath(Task& t, UserCString addr,
                                        bool follow) {
  TRY(std::string path, CopyInPath(t, addr));
  TRY(vfs::ResolveBase base, BaseAt(t, AT_FDCWD, path));
  vfs::ResolveOptions opts;
  opts.follow_final = follow;
  return vfs::Resolve(base, path, opts);
}

// copy_mount_string: a NUL-terminated string of at most a page (EFAULT).
KResult<std::string> CopyMountString(Task& t, uint64_t addr) {
  KResult<std::string> s = t.CopyInString(addr, kPageSize);
  if (!s.ok() && s.error() == kENAMETOOLONG) return kEINVAL;
  return s;
}

// copy_mount_options: up to a page of data, as much as is readable (EFAULT
// only when not even the first byte is), cut at the first NUL.
KResult<std::string> CopyMountData(Task& t, uint64_t addr) {
  if (addr == 0) return std::string();
  std::string buf(kPageSize, '\0');
  TRY(size_t n, t.CopyIn(addr, buf.data(), buf.size()));
  if (n == 0) return kEFAULT;
  buf.resize(n);
  buf[std::min(n, kPageSize - 1)] = '\0';
  buf.resize(strnlen(buf.data(), buf.size()));
  return buf;
}

// memparse: a number with an optional K/M/G/T/P/E suffix (1024-based).
// `rest` gets what follows.
bool MemParse(absl::string_view s, uint64_t* out, absl::string_view* rest) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0) return false;
  uint64_t v = 0;
  if (!absl::SimpleAtoi(s.substr(0, i), &v)) return false;
  int shift = 0;
  if (i < s.size()) {
    switch (s[i]) {
      case 'E':
      case 'e':
        shift = 60;
        break;  // NOLINT
      case 'P':
      case 'p':
        shift = 50;
        break;  // NOLINT
      case 'T':
      case 't':
        shift = 40;
        break;  // NOLINT
      case 'G':
      case 'g':
        shift = 30;
        break;  // NOLINT
      case 'M':
      case 'm':
        shift = 20;
        break;  // NOLINT
      case 'K':
      case 'k':
        shift = 10;
        break;  // NOLINT
      default:
        break;  // NOLINT
    }
    if (shift != 0) ++i;
  }
  if (shift != 0 && (v >> (64 - shift)) != 0) return false;
  *out = v << shift;
  *rest = s.substr(i);
  return true;
}

// The generic superblock flags a data string may carry (vfs_parse_sb_flag).
// Sets *read_only for "ro"/"rw"; true if `key` is one of them.
bool ParseSbFlag(absl::string_view key, bool* read_only) {
  if (key == "ro") {
    *read_only = true;
    return true;
  }
  if (key == "rw") {
    *read_only = false;
    return true;
  }
  for (absl::string_view k : {"dirsync", "lazytime", "mand", "posixacl", "sync",
                              "silent", "async", "nolazytime", "nomand"}) {
    if (key == k) return true;
  }
  return false;
}

// A parsed tmpfs data string (shmem_parse_one) and the options as
// shmem_show_options shows them.
struct TmpfsConfig {
  fs::tmpfs::Options opts;
  std::optional<uint64_t> nr_inodes;  // unset: the default
  bool read_only = false;
  std::string shown;
};

// `mf` is the memory file the tmpfs will use: its limit (--memory) is the
// "RAM" the defaults are half of.
KResult<TmpfsConfig> ParseTmpfs(absl::string_view data,
                                const platform::MemoryFile& mf) {
  TmpfsConfig c;
  bool size_set = false;
  uint64_t size = 0;
  for (absl::string_view opt : absl::StrSplit(data, ',', absl::SkipEmpty())) {
    absl::string_view key = opt, value;
    bool has_value = false;
    if (size_t eq = opt.find('='); eq != absl::string_view::npos) {
      key = opt.substr(0, eq);
      value = opt.substr(eq + 1);
      has_value = true;
    }
    if (!has_value && ParseSbFlag(key, &c.read_only)) continue;
    if (!has_value) return kEINVAL;
    absl::string_view rest;
    if (key == "size") {
      if (!MemParse(value, &size, &rest)) return kEINVAL;
      if (rest == "%") {
        uint64_t total = fs::tmpfs::DefaultMaxPages(mf) * 2 * kPageSize;
        size = static_cast<uint64_t>(static_cast<unsigned __int128>(total) *
                                     size / 100);
      } else if (!rest.empty()) {
        return kEINVAL;
      }
      size_set = true;
    } else if (key == "nr_blocks") {
      uint64_t blocks;
      if (!MemParse(value, &blocks, &rest) || !rest.empty()) return kEINVAL;
      if (blocks > (~uint64_t{0} / kPageSize)) return kEINVAL;
      size = blocks * kPageSize;
      size_set = true;
    } else if (key == "nr_inodes") {
      uint64_t n;
      if (!MemParse(value, &n, &rest) || !rest.empty()) return kEINVAL;
      c.nr_inodes = n;
    } else if (key == "mode") {
      uint32_t mode = 0;
      if (value.empty()) return kEINVAL;
      for (char ch : value) {
        if (ch < '0' || ch > '7' || mode > (0xffffffffu >> 3)) return kEINVAL;
        mode = mode * 8 + static_cast<uint32_t>(ch - '0');
      }
      c.opts.root_mode = mode & 07777;
    } else if (key == "uid" || key == "gid") {
      uint32_t id;
      if (!absl::SimpleAtoi(value, &id) || id == 0xffffffff) return kEINVAL;
      (key == "uid" ? c.opts.root_uid : c.opts.root_gid) = id;
    } else {
      return kEINVAL;  // "tmpfs: Unknown parameter"
    }
  }
  // shmem_show_options: size and nr_inodes when not the defaults (half of
  // RAM's pages each); 0 is "unlimited".
  const uint64_t default_pages = fs::tmpfs::DefaultMaxPages(mf);
  if (size_set) {
    uint64_t pages = size / kPageSize + (size % kPageSize != 0);
    c.opts.max_bytes = pages * kPageSize;
    if (pages != default_pages) {
      absl::StrAppend(&c.shown, ",size=", pages * 4, "k");
    }
  }
  if (c.nr_inodes) {
    c.opts.max_inodes = *c.nr_inodes;
    if (*c.nr_inodes != default_pages) {
      absl::StrAppend(&c.shown, ",nr_inodes=", *c.nr_inodes);
    }
  }
  if (c.opts.root_mode != 01777) {
    absl::StrAppendFormat(&c.shown, ",mode=%03o", c.opts.root_mode);
  }
  if (c.opts.root_uid != 0) absl::StrAppend(&c.shown, ",uid=", c.opts.root_uid);
  if (c.opts.root_gid != 0) absl::StrAppend(&c.shown, ",gid=", c.opts.root_gid);
  if (!c.shown.empty()) c.shown.erase(0, 1);
  return c;
}

// devpts (devpts_parse_param), after the generic flags, which are matched
// by key alone as vfs_parse_sb_flag does.
KResult<fs::devpts::Options> ParseDevpts(absl::string_view data,
                                         bool* read_only) {
  fs::devpts::Options o;
  for (absl::string_view opt : absl::StrSplit(data, ',', absl::SkipEmpty())) {
    absl::string_view key = opt;
    std::optional<std::string_view> value;
    if (size_t eq = opt.find('='); eq != absl::string_view::npos) {
      key = opt.substr(0, eq);
      value = std::string_view(opt.data() + eq + 1, opt.size() - eq - 1);
    }
    if (ParseSbFlag(key, read_only)) continue;
    TRY_VOID(o.Parse(std::string_view(key.data(), key.size()), value));
  }
  return o;
}

// proc, sysfs: no options of their own here, only the generic flags.
KResult<bool> ParseNoOptions(absl::string_view data) {
  bool read_only = false;
  for (absl::string_view opt : absl::StrSplit(data, ',', absl::SkipEmpty())) {
    if (!ParseSbFlag(opt, &read_only)) return kEINVAL;
  }
  return read_only;
}

// mount(2)'s MS_* flags as per-mount flags (path_mount): relatime unless
// MS_NOATIME or MS_STRICTATIME.
uint32_t MountFlags(uint64_t flags) {
  uint32_t m = 0;
  if (flags & MS_RDONLY) m |= vfs::kMountReadOnly;
  if (flags & MS_NOSUID) m |= vfs::kMountNoSuid;
  if (flags & MS_NODEV) m |= vfs::kMountNoDev;
  if (flags & MS_NOEXEC) m |= vfs::kMountNoExec;
  if (flags & MS_NODIRATIME) m |= vfs::kMountNoDiratime;
  if (flags & MS_STRICTATIME) {
    m |= vfs::kMountStrictAtime;
  } else if (flags & MS_NOATIME) {
    m |= vfs::kMountNoAtime;
  }
  return m;
}

// A new instance of `type` (do_new_mount): ENODEV for an unknown type.
KResult<void> NewMount(Task& t, const vfs::VirtualDentry& point,
                       const std::string& type, const std::string& source,
                       const std::string& data, uint32_t mnt_flags) {
  std::shared_ptr<vfs::Filesystem> fs;
  std::string shown;
  bool read_only = false;
  if (type == "tmpfs") {
    TRY(TmpfsConfig c, ParseTmpfs(data, t.mm().memory_file()));
    fs = fs::tmpfs::Filesystem::Create(t.mm().memory_file(), c.opts);
    shown = std::move(c.shown);
    read_only = c.read_only;
  } else if (type == "proc") {
    TRY(read_only, ParseNoOptions(data));
    fs = fs::proc::NewProcFilesystem(t.kernel());
  } else if (type == "sysfs") {
    TRY(read_only, ParseNoOptions(data));
    fs = fs::sys::NewSysFilesystem();
  } else if (type == "devpts") {
    TRY(fs::devpts::Options o, ParseDevpts(data, &read_only));
    fs = fs::devpts::NewDevptsFilesystem(o);
    shown = o.Show();
  } else {
    // mqueue, cgroup, overlay... are not file system types of the Sentry
    // yet (/proc/filesystems lists the ones that are).
    return kENODEV;
  }
  if (read_only) mnt_flags |= vfs::kMountReadOnly;
  std::shared_ptr<vfs::Dentry> root = fs->root();
  std::shared_ptr<vfs::Mount> m =
      vfs::Mount::Create(std::move(fs), std::move(root), mnt_flags,
                         source.empty() ? type : source, std::move(shown));
  return vfs::Mount::Graft(point, std::move(m));
}

// mount(2).
SyscallResult Mount(Task& t, UserCString source_addr, UserCString target_addr,
                    UserCString type_addr, uint64_t flags, UserAddr data_addr) {
  // do_mount: the strings and the data first (EFAULT), then the target
  // (ENOENT, ENOTDIR...), then the privilege check.
  std::string type, source;
  if (type_addr.addr != 0) {
    TRY(type, CopyMountString(t, type_addr.addr));
  }
  if (source_addr.addr != 0) {
    TRY(source, CopyMountString(t, source_addr.addr));
  }
  TRY(std::string data, CopyMountData(t, data_addr.addr));
  TRY(vfs::VirtualDentry point, ResolvePath(t, target_addr, true));
  if ((flags & kMsMgcMsk) == kMsMgcVal) flags &= ~kMsMgcMsk;
  if (flags & kMsNoUser) return kEINVAL;
  if (!t.creds().HasCapability(kernel::kCapSysAdmin)) return kEPERM;

  uint32_t mnt_flags = MountFlags(flags);
  const bool at_root = point.dentry == point.mount->root();
  if ((flags & MS_REMOUNT) && (flags & (MS_NOATIME | MS_NODIRATIME |
                                        MS_RELATIME | MS_STRICTATIME)) == 0) {
    // path_mount: a remount keeps the atime mode unless given.
    mnt_flags = (mnt_flags & ~vfs::kMountAtimeMask) |
                (point.mount->flags() & vfs::kMountAtimeMask);
  }
  if ((flags & (MS_REMOUNT | MS_BIND)) == (MS_REMOUNT | MS_BIND)) {
    // do_reconfigure_mnt: the per-mount flags only.
    if (!at_root) return kEINVAL;
    if (!point.mount->CanChangeLockedFlags(mnt_flags)) return kEPERM;
    uint32_t old = point.mount->flags();
    point.mount->set_flags((old & ~vfs::kMountSettable) | mnt_flags);
    return uint64_t{0};
  }
  if (flags & MS_REMOUNT) {
    // do_remount: the options are checked as for a new mount of the type;
    // the atime mode is kept unless given.
    if (!at_root) return kEINVAL;
    if (!point.mount->CanChangeLockedFlags(mnt_flags)) return kEPERM;
    const std::string fstype(point.mount->fs().type_name());
    bool read_only = false;
    if (fstype == "tmpfs") {
      TRY(TmpfsConfig c, ParseTmpfs(data, t.mm().memory_file()));
      read_only = c.read_only;
    } else if (fstype == "devpts") {
      TRY(fs::devpts::Options o, ParseDevpts(data, &read_only));
      fs::devpts::Reconfigure(point.mount->fs(), o);
    } else {
      TRY(read_only, ParseNoOptions(data));
    }
    if (read_only) mnt_flags |= vfs::kMountReadOnly;
    uint32_t old = point.mount->flags();
    point.mount->set_flags((old & ~vfs::kMountSettable) | mnt_flags);
    return uint64_t{0};
  }
  if (flags & MS_BIND) {
    if (source.empty()) return kEINVAL;
    TRY(vfs::VirtualDentry from, ResolvePath(t, source_addr, true));
    TRY(std::shared_ptr<vfs::Mount> copy,
        vfs::Mount::CloneTree(from, flags & MS_REC));
    TRY_VOID(vfs::Mount::Graft(point, std::move(copy)));
    return uint64_t{0};
  }
  if (flags & kMsPropagation) {
    // do_change_type: exactly one type, nothing else but MS_REC/MS_SILENT.
    if (!at_root) return kEINVAL;
    uint64_t type_bits = flags & ~uint64_t{MS_REC | MS_SILENT};
    vfs::Propagation p;
    switch (type_bits) {
      case MS_SHARED:
        p = vfs::Propagation::kShared;
        break;
      case MS_PRIVATE:
        p = vfs::Propagation::kPrivate;
        break;
      case MS_SLAVE:
        p = vfs::Propagation::kSlave;
        break;
      case MS_UNBINDABLE:
        p = vfs::Propagation::kUnbindable;
        break;
      default:
        return kEINVAL;
    }
    point.mount->SetPropagation(p, flags & MS_REC);
    return uint64_t{0};
  }
  if (flags & MS_MOVE) {
    if (source.empty()) return kEINVAL;
    TRY(vfs::VirtualDentry from, ResolvePath(t, source_addr, true));
    TRY_VOID(vfs::Mount::Move(from, point));
    return uint64_t{0};
  }
  if (type_addr.addr == 0) return kEINVAL;
  TRY_VOID(NewMount(t, point, type, source, data, mnt_flags));
  return uint64_t{0};
}

// umount2(2).
SyscallResult Umount2(Task& t, UserCString target_addr, int32_t flags) {
  constexpr int32_t kKnown =
      MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW;
  if (flags & ~kKnown) return kEINVAL;
  if (!t.creds().HasCapability(kernel::kCapSysAdmin)) return kEPERM;
  TRY(vfs::VirtualDentry vd,
      ResolvePath(t, target_addr, !(flags & UMOUNT_NOFOLLOW)));
  // can_umount: the path must be a mount's root, and not a locked mount
  // (the sandbox's own: what it covers stays covered).
  if (vd.dentry != vd.mount->root()) return kEINVAL;
  if (vd.mount->locked()) return kEINVAL;
  // The namespace root (no parent) is the root of every task here.
  if (!vd.mount->MountPoint().ok()) {
    return (flags & MNT_EXPIRE) ? kEINVAL : kEBUSY;
  }
  vd.dentry.reset();  // only vd.mount stays: one caller reference
  if (flags & MNT_EXPIRE) {
    if (flags & (MNT_FORCE | MNT_DETACH)) return kEINVAL;
    if (!vd.mount->Unused(1)) return kEBUSY;
    if (!vd.mount->TestAndSetExpiryMark()) return kEAGAIN;
  }
  if (flags & MNT_DETACH) {
    // Lazy: gone from the tree now; open files and cwds inside keep it.
    // Locked mounts below stay connected to the detached tree.
    vd.mount->DetachTree(/*keep_locked=*/true);
    return uint64_t{0};
  }
  // MNT_FORCE: no file system here has an umount_begin to abort pending
  // requests, so it is a plain umount (still EBUSY when busy), as Linux for
  // such file systems.
  TRY_VOID(vd.mount->Umount(1));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Mount);
SANDBOX_SYSCALL_HANDLER(Umount2);

}  // namespace sandbox::syscalls
