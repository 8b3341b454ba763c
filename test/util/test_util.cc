#include "test/util/test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "gtest/gtest.h"

namespace sandbox::testutil {

int InForkedChild(const std::function<void()>& fn) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    fn();
    _exit(0);
  }
  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  return w == pid ? status : -1;
}

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  if (dir != nullptr && *dir != '\0') return dir;
  return "/tmp";
}

std::string NewTempPath() {
  static std::atomic<int> counter{0};
  return TempDir() + "/tmp." + std::to_string(getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

TempPath TempPath::CreateFile(mode_t mode) {
  std::string path = NewTempPath();
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode);
  if (fd < 0) {
    ADD_FAILURE() << "creating " << path << ": " << strerror(errno);
  } else {
    close(fd);
  }
  return TempPath(path);
}

TempPath TempPath::CreateDir(mode_t mode) {
  std::string path = NewTempPath();
  if (mkdir(path.c_str(), mode) != 0) {
    ADD_FAILURE() << "mkdir " << path << ": " << strerror(errno);
  }
  return TempPath(path);
}

TempPath::~TempPath() {
  if (path_.empty()) return;
  nftw(
      path_.c_str(),
      [](const char* p, const struct stat*, int type, struct FTW*) {
        if (type == FTW_DP) {
          rmdir(p);
        } else {
          unlink(p);
        }
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

bool DropCapabilities(bool keep_permitted) {
  struct {
    uint32_t version;
    int pid;
  } header = {0x20080522, 0};  // _LINUX_CAPABILITY_VERSION_3
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (auto& d : data) {
    d.effective = 0;
    d.inheritable = 0;
    if (!keep_permitted) d.permitted = 0;
  }
  return syscall(SYS_capset, &header, data) == 0;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::string out;
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string ProcStatusState(pid_t pid) {
  std::string s = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/status");
  size_t at = s.find("\nState:\t");
  if (at == std::string::npos) return "";
  size_t end = s.find('\n', at + 1);
  return s.substr(at + 8, end - at - 8);
}

char ProcStatState(pid_t pid) {
  std::string s = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = s.rfind(')');
  if (paren == std::string::npos || paren + 2 >= s.size()) return '?';
  return s[paren + 2];
}

bool ReadByteWithin10s(int fd) {
  if (fcntl(fd, F_SETFL, O_NONBLOCK) != 0) return false;
  for (int i = 0; i < 1000; ++i) {
    char c;
    if (read(fd, &c, 1) == 1) return true;
    timespec ts = {0, 10000000};
    nanosleep(&ts, nullptr);
  }
  return false;
}

Pipe::Pipe() {
  int fds[2] = {-1, -1};
  EXPECT_THAT(pipe2(fds, O_CLOEXEC), SyscallSucceeds());
  r.reset(fds[0]);
  w.reset(fds[1]);
}

}  // namespace sandbox::testutil
