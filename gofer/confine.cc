#include "gofer/confine.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gofer/protocol/unique_fd.h"
#include "gofer/server/node.h"

namespace gofer {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::ErrnoToStatus(errno, what);
}

constexpr unsigned long kMountFlags = MS_NODEV | MS_NOSUID;

// Opens target (a relative path) beneath root without following any
// symlink or crossing a mount, one component at a time.
absl::Status OpenTarget(int root, const std::string& target, UniqueFd* out) {
  int err = OpenPathBeneath(root, target, out);
  if (err != 0) {
    return absl::ErrnoToStatus(err, absl::StrCat("open mount target ", target));
  }
  return absl::OkStatus();
}

// Writes content to a /proc/self file (uid_map, gid_map, setgroups).
absl::Status WriteProcFile(const char* path, const std::string& content) {
  UniqueFd fd(open(path, O_WRONLY | O_CLOEXEC));
  if (!fd.valid() || write(fd.get(), content.data(), content.size()) !=
                         static_cast<ssize_t>(content.size())) {
    return Errno(absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

// Step 0: a user namespace in which the caller's uid and gid are 0.
absl::Status EnterUserNamespace() {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  // A process that changed its uid is not dumpable, and its /proc/self
  // files then belong to root: make it dumpable to write its own maps.
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return Errno("PR_SET_DUMPABLE");
  if (unshare(CLONE_NEWUSER) != 0) return Errno("unshare(NEWUSER)");
  absl::Status s = WriteProcFile("/proc/self/setgroups", "deny");
  if (s.ok())
    s = WriteProcFile("/proc/self/uid_map", absl::StrCat("0 ", uid, " 1"));
  if (s.ok())
    s = WriteProcFile("/proc/self/gid_map", absl::StrCat("0 ", gid, " 1"));
  return s;
}

// Undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' &&
        s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 +
                                      (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// After a recursive bind at `dir`: detaches every submount below it that
// may be detached (deepest first). Locked ones (EINVAL/EPERM) stay; no walk
// crosses into them (RESOLVE_NO_XDEV).
void DetachUnlockedSubmounts(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<std::string> below;
  std::string line;
  const std::string prefix = dir + "/";
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    if (!(fields >> id >> parent >> devno >> root >> point)) continue;
    point = Unescape(point);
    if (point.compare(0, prefix.size(), prefix) == 0) below.push_back(point);
  }
  std::sort(below.begin(), below.end(),
            [](const std::string& a, const std::string& b) {
              return std::count(a.begin(), a.end(), '/') >
                     std::count(b.begin(), b.end(), '/');
            });
  for (const std::string& p : below) umount2(p.c_str(), MNT_DETACH);
}

}  // namespace

absl::Status DropCapabilities(bool keep_chown) {
  // DAC_OVERRIDE and DAC_READ_SEARCH: the guest's root reads and writes
  // what the host's root may; FOWNER: chmod and utimes of files not the
  // Gofer's. CAP_FSETID is never kept: without it the host clears S_ISUID
  // and S_ISGID on every write and chown by the Gofer, as for any user.
  constexpr int kKeep[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};
  uint64_t keep = 0;
  for (int c : kKeep) keep |= uint64_t{1} << c;
  // Only ":suid" connections give files owners other than the Gofer's.
  if (keep_chown) keep |= uint64_t{1} << CAP_CHOWN;
  for (int c = 0; c <= 63; ++c) {
    if (keep & (uint64_t{1} << c)) continue;
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL &&
        errno != EPERM) {
      return Errno("PR_CAPBSET_DROP");
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
      errno != EINVAL) {
    return Errno("PR_CAP_AMBIENT_CLEAR_ALL");
  }
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return Errno("capget");
  for (int i = 0; i < 2; ++i) {
    uint32_t k = static_cast<uint32_t>(keep >> (32 * i));
    data[i].effective &= k;
    data[i].permitted &= k;
    data[i].inheritable = 0;
  }
  if (syscall(SYS_capset, &hdr, data) != 0) return Errno("capset");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Errno("PR_SET_NO_NEW_PRIVS");
  }
  return absl::OkStatus();
}

absl::Status Confine(const ConfineOptions& options,
                     std::vector<UniqueFd>* volume_roots) {
  if (options.root.empty() || options.root[0] != '/') {
    return absl::InvalidArgumentError("root must be an absolute path");
  }
  if (options.user_namespace) {
    absl::Status s = EnterUserNamespace();
    if (!s.ok()) return s;
  }
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET) != 0) {
    return Errno("unshare(NEWNS|NEWIPC|NEWUTS|NEWNET)");
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return Errno("make / rslave");
  }
  // Everything named by the (trusted) configuration is opened now, before
  // the staging mount below may hide it.
  UniqueFd host_root(
      open(options.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!host_root.valid()) return Errno(absl::StrCat("open ", options.root));
  std::vector<UniqueFd> sources;
  for (const BindMount& m : options.submounts) {
    sources.emplace_back(open(m.source.c_str(), O_PATH | O_CLOEXEC));
    if (!sources.back().valid()) return Errno(absl::StrCat("open ", m.source));
  }
  std::vector<UniqueFd> volume_sources;
  for (const Volume& v : options.volumes) {
    volume_sources.emplace_back(
        open(v.source.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!volume_sources.back().valid()) {
      return Errno(absl::StrCat("open ", v.source));
    }
  }
  // A private tmpfs to build the new root in (pivot_root needs the new
  // root to be a mount point other than the current root, which a bind of
  // "/" onto itself is not). It is detached with the old root.
  const char* staging = nullptr;
  for (const char* dir : {"/tmp", "/mnt", "/run", "/var"}) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      staging = dir;
      break;
    }
  }
  if (staging == nullptr) return absl::NotFoundError("no staging directory");
  if (mount("gofer-staging", staging, "tmpfs", kMountFlags | MS_NOEXEC,
            "size=16k,mode=0700") != 0) {
    return Errno(absl::StrCat("mount staging tmpfs on ", staging));
  }
  std::string new_root = absl::StrCat(staging, "/root");
  if (mkdir(new_root.c_str(), 0700) != 0) return Errno("mkdir staging root");
  // Non-recursive: the host's submounts below root do not come along.
  std::string from = absl::StrCat("/proc/self/fd/", host_root.get());
  if (mount(from.c_str(), new_root.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    // EINVAL: submounts locked by a less privileged user namespace, which
    // may not be uncovered. Bind them too; they stay unreachable, since no
    // walk crosses a mount point (RESOLVE_NO_XDEV, node.h).
    if (errno != EINVAL || mount(from.c_str(), new_root.c_str(), nullptr,
                                 MS_BIND | MS_REC, nullptr) != 0) {
      return Errno(absl::StrCat("bind ", options.root));
    }
    DetachUnlockedSubmounts(new_root);
  }
  host_root.reset();
  UniqueFd root(open(new_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return Errno(absl::StrCat("open ", new_root));
  for (size_t i = 0; i < options.submounts.size(); ++i) {
    const BindMount& m = options.submounts[i];
    UniqueFd target;
    absl::Status s = OpenTarget(root.get(), m.target, &target);
    if (!s.ok()) return s;
    std::string from = absl::StrCat("/proc/self/fd/", sources[i].get());
    std::string where = absl::StrCat("/proc/self/fd/", target.get());
    if (mount(from.c_str(), where.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Errno(absl::StrCat("bind ", m.source, " on ", m.target));
    }
  }
  sources.clear();
  // Volumes: bound in the staging tmpfs (outside the new root), remounted
  // nodev/nosuid(/ro), then held only by an O_PATH descriptor.
  std::vector<UniqueFd> volumes;
  for (size_t i = 0; i < options.volumes.size(); ++i) {
    std::string dir = absl::StrCat(staging, "/volume", i);
    if (mkdir(dir.c_str(), 0700) != 0) return Errno("mkdir staging volume");
    std::string from = absl::StrCat("/proc/self/fd/", volume_sources[i].get());
    if (mount(from.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Errno(absl::StrCat("bind volume ", options.volumes[i].source));
    }
    unsigned long flags = MS_REMOUNT | MS_BIND | kMountFlags;
    if (options.volumes[i].read_only) flags |= MS_RDONLY;
    if (mount(nullptr, dir.c_str(), nullptr, flags, nullptr) != 0) {
      return Errno(absl::StrCat("remount volume ", options.volumes[i].source));
    }
    volumes.emplace_back(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!volumes.back().valid()) return Errno("open volume");
  }
  volume_sources.clear();
  if (fchdir(root.get()) != 0) return Errno("fchdir root");
  // nodev, nosuid (and ro) on every mount. Not noexec: the Sentry maps
  // donated FDs of guest binaries PROT_EXEC.
  auto remount = [](const std::string& path, bool ro) -> absl::Status {
    unsigned long flags = MS_REMOUNT | MS_BIND | kMountFlags;
    if (ro) flags |= MS_RDONLY;
    if (mount(nullptr, path.c_str(), nullptr, flags, nullptr) != 0) {
      return Errno(absl::StrCat("remount ", path));
    }
    return absl::OkStatus();
  };
  // Each submount is reached again the same symlink-free way; the path
  // lookup now ends on the mount's root, which the remount applies to.
  for (const BindMount& m : options.submounts) {
    UniqueFd target;
    absl::Status s = OpenTarget(root.get(), m.target, &target);
    if (!s.ok()) return s;
    s = remount(absl::StrCat("/proc/self/fd/", target.get()), m.read_only);
    if (!s.ok()) return s;
  }
  absl::Status s = remount(".", options.root_read_only);
  if (!s.ok()) return s;
  // pivot_root(".", "."): stacks the old root on top of the new one; the
  // detach below removes it.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach old root");
  if (chdir("/") != 0 || chroot("/") != 0) return Errno("chroot /");
  s = DropCapabilities(options.keep_chown);
  if (s.ok() && volume_roots != nullptr) *volume_roots = std::move(volumes);
  return s;
}

}  // namespace gofer
