#include "broker/confine.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "hostconfine/capabilities.h"

namespace sandbox::broker {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::ErrnoToStatus(errno, what);
}

bool WriteFile(const char* path, const std::string& s) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
  close(fd);
  return ok;
}

absl::Status EnterUserNamespace() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER) != 0) return Errno("unshare(NEWUSER)");
  if (!WriteFile("/proc/self/setgroups", "deny") ||
      !WriteFile("/proc/self/uid_map", absl::StrCat("0 ", uid, " 1\n")) ||
      !WriteFile("/proc/self/gid_map", absl::StrCat("0 ", gid, " 1\n"))) {
    return Errno("user namespace id maps");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DropAllCapabilities() {
  return hostconfine::DropCapabilitiesExcept(0);
}

absl::Status Confine() {
  if (geteuid() != 0) {
    absl::Status s = EnterUserNamespace();
    if (!s.ok()) return s;
  }
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) != 0) {
    return Errno("unshare(NEWNS|NEWIPC|NEWUTS)");
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("make / rprivate");
  }
  const char* staging = nullptr;
  for (const char* dir : {"/tmp", "/mnt", "/run", "/var", "/dev"}) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      staging = dir;
      break;
    }
  }
  if (staging == nullptr) return absl::NotFoundError("no staging directory");
  constexpr unsigned long kFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (mount("broker-root", staging, "tmpfs", kFlags, "size=4k,mode=0500") !=
      0) {
    return Errno(absl::StrCat("mount empty tmpfs on ", staging));
  }
  if (chdir(staging) != 0) return Errno("chdir staging");
  // pivot_root(".", "."): the old root stacks on the new one; the detach
  // removes it.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach old root");
  if (chdir("/") != 0 || chroot("/") != 0) return Errno("chroot /");
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | kFlags,
            nullptr) != 0) {
    return Errno("remount root read-only");
  }
  return DropAllCapabilities();
}

}  // namespace sandbox::broker
