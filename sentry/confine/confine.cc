#include "sentry/confine/confine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "absl/base/internal/sysinfo.h"
#include "absl/strings/str_cat.h"
#include "hostconfine/capabilities.h"

namespace sandbox::confine {
namespace {

constexpr char kTscFreqFile[] = "/sys/devices/system/cpu/cpu0/tsc_freq_khz";

absl::Status Errno(const std::string& what) {
  return absl::ErrnoToStatus(errno, what);
}

// Threads of this process, from /proc/self/task (before pivot_root).
int CountThreads() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

bool HasEffectiveCap(int cap) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return data[cap / 32].effective & (1u << (cap % 32));
}

absl::Status WriteFile(const char* path, const std::string& content) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno(absl::StrCat("open ", path));
  ssize_t n = write(fd, content.data(), content.size());
  int e = errno;
  close(fd);
  if (n != static_cast<ssize_t>(content.size())) {
    errno = n < 0 ? e : EIO;
    return Errno(absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

// Step 3: a user namespace in which the caller's uid and gid map to
// themselves (files the Sentry holds keep their owners in fstat).
absl::Status EnterUserNamespace() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER) != 0) return Errno("unshare(CLONE_NEWUSER)");
  absl::Status s = WriteFile("/proc/self/setgroups", "deny");
  if (s.ok()) {
    s = WriteFile("/proc/self/uid_map", absl::StrCat(uid, " ", uid, " 1"));
  }
  if (s.ok()) {
    s = WriteFile("/proc/self/gid_map", absl::StrCat(gid, " ", gid, " 1"));
  }
  return s;
}

// Step 5: pivot_root into an empty read-only tmpfs.
absl::Status PivotToEmptyRoot() {
  // Mount events must not reach the host's namespace (nor come from it).
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("make / private");
  }
  // Any directory serves as the mount point; the tmpfs hides it in this
  // namespace only, and the old root goes away with it.
  const char* where = "/proc";
  struct stat st;
  if (stat("/tmp", &st) == 0 && S_ISDIR(st.st_mode)) where = "/tmp";
  constexpr unsigned long kFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (mount("runsc-root", where, "tmpfs", kFlags,
            "size=4k,nr_inodes=4,mode=0555") != 0) {
    return Errno(absl::StrCat("mount tmpfs on ", where));
  }
  if (chdir(where) != 0) return Errno("chdir new root");
  // pivot_root(".", "."): the old root ends up stacked on the new one; the
  // lazy unmount detaches it (and every host mount below it).
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach old root");
  if (chdir("/") != 0) return Errno("chdir /");
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | kFlags,
            nullptr) != 0) {
    return Errno("remount / read-only");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CloseFdsExcept(std::vector<int> keep) {
  keep.push_back(0);
  keep.push_back(1);
  keep.push_back(2);
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  unsigned first = 0;  // lowest FD not yet handled
  for (int fd : keep) {
    if (fd < 0) continue;
    if (static_cast<unsigned>(fd) > first &&
        syscall(SYS_close_range, first, static_cast<unsigned>(fd) - 1, 0) !=
            0) {
      return Errno("close_range");
    }
    first = static_cast<unsigned>(fd) + 1;
  }
  if (syscall(SYS_close_range, first, ~0u, 0) != 0) {
    return Errno("close_range");
  }
  return absl::OkStatus();
}

absl::Status DropAllCapabilities() {
  // While CAP_SETPCAP is still held: uid 0 never regains capabilities (by
  // execve or setuid), and that cannot be undone. EPERM without it (a
  // caller that already has no capabilities) is not an error.
  const int bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
                   SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                   SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                   SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0 && errno != EPERM) {
    return Errno("PR_SET_SECUREBITS");
  }
  return hostconfine::DropCapabilitiesExcept(0);
}

absl::Status ConfineProcess(const ConfineOptions& options) {
  int threads = CountThreads();
  if (threads != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "confine: the process must be single-threaded (", threads, ")"));
  }
  // 1.
  if (absl::Status s = CloseFdsExcept(options.keep_fds); !s.ok()) return s;
  // 2. Abseil's Mutex reads /sys/devices/system/cpu/online and
  // .../cpu0/tsc_freq_khz the first time it contends. Without the latter
  // file Abseil measures the TSC instead (sleeps of 1 ms and more, no file),
  // which works as well after confinement and costs nothing until needed.
  (void)absl::base_internal::NumCPUs();
  if (access(kTscFreqFile, R_OK) == 0) {
    (void)absl::base_internal::NominalCPUFrequency();
  }
  // 3.
  if (!HasEffectiveCap(CAP_SYS_ADMIN)) {
    if (absl::Status s = EnterUserNamespace(); !s.ok()) return s;
  }
  // 4.
  int ns = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;
  if (options.new_network) ns |= CLONE_NEWNET;
  if (unshare(ns) != 0) return Errno("unshare(NEWNS|NEWIPC|NEWUTS|NEWNET)");
  // 5.
  if (absl::Status s = PivotToEmptyRoot(); !s.ok()) return s;
  // 6.
  return DropAllCapabilities();
}

}  // namespace sandbox::confine
