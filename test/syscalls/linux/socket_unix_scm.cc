// AF_UNIX control messages: SCM_RIGHTS (one, several, SCM_MAX_FD = 253 and
// 254 EINVAL, MSG_CTRUNC closing what does not fit, MSG_CMSG_CLOEXEC, a
// socket passed over itself, MSG_PEEK, stream reads stopping at a message
// with descriptors, a cycle of sockets in flight collected after close),
// SCM_CREDENTIALS with SO_PASSCRED, SO_PEERCRED, and malformed control
// data (bad cmsg_len, unknown types, bad descriptors, huge msg_controllen).
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr int kScmMaxFd = 253;

// Sends `data` with one SCM_RIGHTS message holding `fds`.
ssize_t SendFds(int sock, const std::vector<int>& fds,
                const std::string& data = "x", int flags = 0) {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov = {const_cast<char*>(data.data()), data.size()};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (!fds.empty()) {
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return sendmsg(sock, &m, flags);
}

// What one recvmsg returned: its value, data, flags and received fds.
struct Received {
  ssize_t n = -1;
  int err = 0;
  std::string data;
  int msg_flags = 0;
  std::vector<int> fds;
  int cmsgs = 0;
  ~Received() {
    for (int fd : fds) close(fd);
  }
};

// recvmsg with `controllen` bytes of control buffer (0: none at all).
void RecvFds(int sock, size_t controllen, int flags, Received* r) {
  char buf[256];
  std::vector<char> control(controllen + 64);
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = controllen ? control.data() : nullptr;
  m.msg_controllen = controllen;
  r->n = recvmsg(sock, &m, flags);
  r->err = errno;
  if (r->n < 0) return;
  r->data.assign(buf, r->n);
  r->msg_flags = m.msg_flags;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    ++r->cmsgs;
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        r->fds.push_back(fd);
      }
    }
  }
}

// The number of open descriptors below 1024.
int OpenFdCount() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) ++n;
  }
  return n;
}

ino_t InodeOf(int fd) {
  struct stat st = {};
  fstat(fd, &st);
  return st.st_ino;
}

TEST(UnixScmTest, PassOnePipeEnd) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  ASSERT_THAT(SendFds(p.a.get(), {pipe.w.get()}, "fd"),
              SyscallSucceedsWithValue(2));
  Received r;
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), 0, &r);
  ASSERT_EQ(r.n, 2) << strerror(r.err);
  EXPECT_EQ(r.data, "fd");
  EXPECT_EQ(r.msg_flags, 0);
  ASSERT_EQ(r.fds.size(), 1u);
  EXPECT_NE(r.fds[0], pipe.w.get());
  EXPECT_EQ(InodeOf(r.fds[0]), InodeOf(pipe.w.get()));
  EXPECT_THAT(fcntl(r.fds[0], F_GETFD), SyscallSucceedsWithValue(0));
  // The received descriptor shares the open file (and its flags).
  EXPECT_THAT(fcntl(r.fds[0], F_GETFL), SyscallSucceedsWithValue(O_WRONLY));
  ASSERT_THAT(write(r.fds[0], "p", 1), SyscallSucceedsWithValue(1));
  char c;
  EXPECT_THAT(read(pipe.r.get(), &c, 1), SyscallSucceedsWithValue(1));
}

TEST(UnixScmTest, PassSeveralInOrderOverEachType) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    SocketPair p(type);
    ASSERT_TRUE(p.ok());
    Pipe p1, p2;
    std::vector<int> fds = {p1.r.get(), p2.w.get(), p1.w.get()};
    ASSERT_THAT(SendFds(p.a.get(), fds), SyscallSucceedsWithValue(1));
    Received r;
    RecvFds(p.b.get(), CMSG_SPACE(3 * sizeof(int)), 0, &r);
    ASSERT_EQ(r.n, 1) << type << ": " << strerror(r.err);
    ASSERT_EQ(r.fds.size(), 3u) << type;
    EXPECT_EQ(r.cmsgs, 1);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(InodeOf(r.fds[i]), InodeOf(fds[i])) << type << " fd " << i;
    }
    EXPECT_EQ(r.msg_flags & MSG_CTRUNC, 0);
  }
}

TEST(UnixScmTest, TwoRightsMessagesArriveAsOne) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  char control[2 * CMSG_SPACE(sizeof(int))] = {};
  char d = 'x';
  iovec iov = {&d, 1};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  int fds[2] = {pipe.r.get(), pipe.w.get()};
  for (int i = 0; i < 2; ++i, c = CMSG_NXTHDR(&m, c)) {
    ASSERT_NE(c, nullptr);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fds[i], sizeof(int));
  }
  ASSERT_THAT(sendmsg(p.a.get(), &m, 0), SyscallSucceedsWithValue(1));
  Received r;
  RecvFds(p.b.get(), 2 * CMSG_SPACE(sizeof(int)), 0, &r);
  ASSERT_EQ(r.n, 1);
  ASSERT_EQ(r.fds.size(), 2u);
  EXPECT_EQ(r.cmsgs, 1);
  EXPECT_EQ(InodeOf(r.fds[0]), InodeOf(pipe.r.get()));
}

TEST(UnixScmTest, ScmMaxFdPassesAndOneMoreIsEinval) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  std::vector<int> fds(kScmMaxFd, pipe.w.get());
  ASSERT_THAT(SendFds(p.a.get(), fds), SyscallSucceedsWithValue(1));
  fds.push_back(pipe.w.get());
  EXPECT_THAT(SendFds(p.a.get(), fds), SyscallFailsWithErrno(EINVAL));
  Received r;
  RecvFds(p.b.get(), CMSG_SPACE(kScmMaxFd * sizeof(int)), 0, &r);
  ASSERT_EQ(r.n, 1);
  EXPECT_EQ(r.fds.size(), static_cast<size_t>(kScmMaxFd));
  EXPECT_EQ(r.msg_flags & MSG_CTRUNC, 0);
  // Nothing of the failed send was queued.
  char c;
  EXPECT_THAT(recv(p.b.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixScmTest, ShortControlBufferIsCtruncAndClosesTheRest) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  ASSERT_THAT(SendFds(p.a.get(), {pipe.w.get(), pipe.w.get(), pipe.w.get()}),
              SyscallSucceedsWithValue(1));
  pipe.w.reset();  // Only the copies in flight keep the write end open.
  int before = OpenFdCount();
  {
    Received r;
    RecvFds(p.b.get(), CMSG_LEN(sizeof(int)), 0, &r);  // Room for one.
    ASSERT_EQ(r.n, 1);
    EXPECT_EQ(r.msg_flags & MSG_CTRUNC, MSG_CTRUNC);
    ASSERT_EQ(r.fds.size(), 1u);
    EXPECT_EQ(OpenFdCount(), before + 1);
  }
  // The one received was the last reference: the pipe reads EOF.
  char c;
  EXPECT_THAT(read(pipe.r.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST(UnixScmTest, NoControlBufferIsCtruncAndInstallsNothing) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  ASSERT_THAT(SendFds(p.a.get(), {pipe.w.get()}), SyscallSucceedsWithValue(1));
  pipe.w.reset();
  int before = OpenFdCount();
  Received r;
  RecvFds(p.b.get(), 0, 0, &r);
  ASSERT_EQ(r.n, 1);
  EXPECT_EQ(r.msg_flags & MSG_CTRUNC, MSG_CTRUNC);
  EXPECT_EQ(OpenFdCount(), before);
  char c;
  EXPECT_THAT(read(pipe.r.get(), &c, 1), SyscallSucceedsWithValue(0));
  // A plain read of such a message discards the descriptors too.
  Pipe pipe2;
  ASSERT_THAT(SendFds(p.a.get(), {pipe2.w.get()}), SyscallSucceedsWithValue(1));
  pipe2.w.reset();
  before = OpenFdCount();
  EXPECT_THAT(read(p.b.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(OpenFdCount(), before);
  EXPECT_THAT(read(pipe2.r.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST(UnixScmTest, CmsgCloexecSetsFdCloexec) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  ASSERT_THAT(SendFds(p.a.get(), {pipe.r.get()}), SyscallSucceedsWithValue(1));
  Received r;
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), MSG_CMSG_CLOEXEC, &r);
  ASSERT_EQ(r.fds.size(), 1u);
  EXPECT_THAT(fcntl(r.fds[0], F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
}

TEST(UnixScmTest, PeekInstallsACopyToo) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  ASSERT_THAT(SendFds(p.a.get(), {pipe.r.get()}), SyscallSucceedsWithValue(1));
  Received peeked, got;
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), MSG_PEEK, &peeked);
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), 0, &got);
  ASSERT_EQ(peeked.fds.size(), 1u);
  ASSERT_EQ(got.fds.size(), 1u);
  EXPECT_NE(peeked.fds[0], got.fds[0]);
  EXPECT_EQ(InodeOf(peeked.fds[0]), InodeOf(got.fds[0]));
}

TEST(UnixScmTest, StreamReadStopsAfterTheBytesWithDescriptors) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  ASSERT_THAT(send(p.a.get(), "ab", 2, 0), SyscallSucceedsWithValue(2));
  ASSERT_THAT(SendFds(p.a.get(), {pipe.r.get()}, "cd"),
              SyscallSucceedsWithValue(2));
  ASSERT_THAT(send(p.a.get(), "ef", 2, 0), SyscallSucceedsWithValue(2));
  Received r1, r2;
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), 0, &r1);
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), 0, &r2);
  // A read goes on up to the end of the bytes the descriptors came with,
  // and no further.
  EXPECT_EQ(r1.data, "abcd");
  EXPECT_EQ(r1.fds.size(), 1u);
  EXPECT_EQ(r2.data, "ef");
  EXPECT_TRUE(r2.fds.empty());
}

TEST(UnixScmTest, SocketPassedOverItself) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  // a's own descriptor travels through a to b.
  ASSERT_THAT(SendFds(p.a.get(), {p.a.get()}), SyscallSucceedsWithValue(1));
  Received r;
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), 0, &r);
  ASSERT_EQ(r.fds.size(), 1u);
  EXPECT_EQ(InodeOf(r.fds[0]), InodeOf(p.a.get()));
  ASSERT_THAT(send(r.fds[0], "s", 1, 0), SyscallSucceedsWithValue(1));
  char c;
  EXPECT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  // And b's descriptor into its own receive queue, then closed unread.
  ASSERT_THAT(SendFds(p.a.get(), {p.b.get()}), SyscallSucceedsWithValue(1));
  p.b.reset();
}

TEST(UnixScmTest, CycleInFlightIsCollectedAfterClose) {
  Pipe pipe;
  {
    SocketPair p(SOCK_DGRAM);
    ASSERT_TRUE(p.ok());
    // Each end sits in the other's receive queue; the pipe's write end
    // travels with them.
    ASSERT_THAT(SendFds(p.a.get(), {p.a.get(), pipe.w.get()}),
                SyscallSucceedsWithValue(1));
    ASSERT_THAT(SendFds(p.b.get(), {p.b.get()}), SyscallSucceedsWithValue(1));
  }
  pipe.w.reset();
  // Only the unreachable cycle holds the write end; the garbage collector
  // (synchronous at close before Linux 6.10, a work item after) frees it.
  // Linux collects when some AF_UNIX socket is released, so the wait
  // releases one now and then (a quiet host releases none of its own).
  pollfd pfd = {pipe.r.get(), POLLIN, 0};
  int ready = 0;
  for (int waited = 0; waited < 10000 && ready == 0; waited += 20) {
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s >= 0) close(s);
    ready = poll(&pfd, 1, 20);
  }
  ASSERT_EQ(ready, 1) << "the cycle was not collected within 10 s";
  EXPECT_TRUE(pfd.revents & POLLHUP) << pfd.revents;
  char c;
  EXPECT_THAT(read(pipe.r.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST(UnixScmTest, PasscredGivesTheSendersCredentials) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    SocketPair p(type);
    ASSERT_TRUE(p.ok());
    int one = 1;
    ASSERT_THAT(
        setsockopt(p.b.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)),
        SyscallSucceeds());
    int v = 0;
    socklen_t len = sizeof(v);
    ASSERT_THAT(getsockopt(p.b.get(), SOL_SOCKET, SO_PASSCRED, &v, &len),
                SyscallSucceeds());
    EXPECT_EQ(v, 1);
    ASSERT_THAT(send(p.a.get(), "c", 1, 0), SyscallSucceedsWithValue(1));
    char buf[4];
    char control[CMSG_SPACE(sizeof(ucred))] = {};
    iovec iov = {buf, sizeof(buf)};
    msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    ASSERT_THAT(recvmsg(p.b.get(), &m, 0), SyscallSucceedsWithValue(1));
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ(c->cmsg_level, SOL_SOCKET);
    EXPECT_EQ(c->cmsg_type, SCM_CREDENTIALS);
    ASSERT_EQ(c->cmsg_len, CMSG_LEN(sizeof(ucred)));
    ucred cred;
    memcpy(&cred, CMSG_DATA(c), sizeof(cred));
    EXPECT_EQ(cred.pid, getpid());
    EXPECT_EQ(cred.uid, getuid());
    EXPECT_EQ(cred.gid, getgid());
  }
}

TEST(UnixScmTest, ExplicitCredentialsNeedPasscredToBeSeen) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ucred mine = {getpid(), getuid(), getgid()};
  char control[CMSG_SPACE(sizeof(ucred))] = {};
  char d = 'e';
  iovec iov = {&d, 1};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_CREDENTIALS;
  c->cmsg_len = CMSG_LEN(sizeof(ucred));
  memcpy(CMSG_DATA(c), &mine, sizeof(mine));
  ASSERT_THAT(sendmsg(p.a.get(), &m, 0), SyscallSucceedsWithValue(1));
  Received r;
  RecvFds(p.b.get(), 64, 0, &r);
  ASSERT_EQ(r.n, 1);
  EXPECT_EQ(r.cmsgs, 0);  // The receiver did not ask for credentials.
  // A wrong cmsg_len for a ucred is EINVAL.
  c->cmsg_len = CMSG_LEN(sizeof(ucred) - 1);
  EXPECT_THAT(sendmsg(p.a.get(), &m, 0), SyscallFailsWithErrno(EINVAL));
}

// Whether `uid` is mapped in this user namespace (/proc/self/uid_map;
// no file: the initial namespace, all mapped).
bool UidMapped(uid_t uid) {
  std::string map = ReadFileOrEmpty("/proc/self/uid_map");
  if (map.empty()) return true;
  const char* p = map.c_str();
  unsigned long inside, outside, count;
  int used;
  while (sscanf(p, "%lu %lu %lu%n", &inside, &outside, &count, &used) == 3) {
    if (uid >= inside && uid - inside < count) return true;
    p += used;
  }
  return false;
}

TEST(UnixScmTest, ForgedCredentialsAreEpermWithoutPrivilege) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  constexpr uid_t kOther = 12345;
  // A uid with no mapping in the namespace is EINVAL before any check.
  const int uid_errno = UidMapped(kOther) ? EPERM : EINVAL;
  int status = InForkedChild([&] {
    if (!DropCapabilities(false)) _exit(10);
    ucred forged[2] = {{getpid(), kOther, getgid()},      // Another uid.
                       {getppid(), getuid(), getgid()}};  // Another pid.
    const int want[2] = {uid_errno, EPERM};
    for (int i = 0; i < 2; ++i) {
      const ucred& cred = forged[i];
      char control[CMSG_SPACE(sizeof(ucred))] = {};
      char d = 'f';
      iovec iov = {&d, 1};
      msghdr m = {};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_CREDENTIALS;
      c->cmsg_len = CMSG_LEN(sizeof(ucred));
      memcpy(CMSG_DATA(c), &cred, sizeof(cred));
      if (sendmsg(p.a.get(), &m, 0) != -1) _exit(11 + i);
      if (errno != want[i]) _exit(20 + i);
    }
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
    GTEST_SKIP() << "cannot drop capabilities here";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(UnixScmTest, PeercredOfASocketpairIsOurs) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ucred cred = {};
  socklen_t len = sizeof(cred);
  ASSERT_THAT(getsockopt(p.a.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(cred));
  EXPECT_EQ(cred.pid, getpid());
  EXPECT_EQ(cred.uid, getuid());
  EXPECT_EQ(cred.gid, getgid());
}

TEST(UnixScmTest, PeercredOfAnUnconnectedSocketIsUnset) {
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  ucred cred = {1, 2, 3};
  socklen_t len = sizeof(cred);
  ASSERT_THAT(getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len),
              SyscallSucceeds());
  EXPECT_EQ(cred.pid, 0);
  EXPECT_EQ(cred.uid, static_cast<uid_t>(-1));
  EXPECT_EQ(cred.gid, static_cast<gid_t>(-1));
}

TEST(UnixScmTest, PeercredAcrossProcessesIsThePeersAtConnectAndListen) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("peercred"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  Pipe done;
  pid_t child = fork();
  ASSERT_THAT(child, SyscallSucceeds());
  if (child == 0) {
    done.w.reset();
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, addr.sa(), addr.len) != 0) _exit(2);
    ucred cred = {};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) _exit(3);
    // The listener's credentials: the parent's.
    if (cred.pid != getppid()) _exit(4);
    char c;
    (void)!read(done.r.get(), &c, 1);  // Stay alive until the parent looked.
    _exit(0);
  }
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  ucred cred = {};
  socklen_t len = sizeof(cred);
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len),
              SyscallSucceeds());
  EXPECT_EQ(cred.pid, child);
  EXPECT_EQ(cred.uid, getuid());
  done.w.reset();
  int status;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, ExitedWithCode(0));
}

// Sends one byte with `control` as the control data.
ssize_t SendControl(int sock, void* control, size_t controllen) {
  char d = 'm';
  iovec iov = {&d, 1};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = controllen;
  return sendmsg(sock, &m, MSG_DONTWAIT);
}

TEST(UnixScmTest, MalformedControlData) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  cmsghdr* c = reinterpret_cast<cmsghdr*>(control);
  auto rights = [&](size_t len) {
    memset(control, 0, sizeof(control));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = len;
    int fd = pipe.w.get();
    memcpy(CMSG_DATA(c), &fd, sizeof(fd));
  };
  // cmsg_len shorter than the header, or past msg_controllen.
  rights(sizeof(cmsghdr) - 1);
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(control)),
              SyscallFailsWithErrno(EINVAL));
  rights(sizeof(control) + 1);
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(control)),
              SyscallFailsWithErrno(EINVAL));
  // An unknown SOL_SOCKET type.
  rights(CMSG_LEN(sizeof(int)));
  c->cmsg_type = 0x7777;
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(control)),
              SyscallFailsWithErrno(EINVAL));
  // Bad descriptors.
  rights(CMSG_LEN(sizeof(int)));
  int bad = -1;
  memcpy(CMSG_DATA(c), &bad, sizeof(bad));
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(control)),
              SyscallFailsWithErrno(EBADF));
  bad = 1000;  // Not open (OpenFdCount covers below 1024).
  ASSERT_THAT(fcntl(bad, F_GETFD), SyscallFailsWithErrno(EBADF));
  memcpy(CMSG_DATA(c), &bad, sizeof(bad));
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(control)),
              SyscallFailsWithErrno(EBADF));
  // msg_controllen over INT_MAX.
  rights(CMSG_LEN(sizeof(int)));
  EXPECT_THAT(SendControl(p.a.get(), control, size_t{INT_MAX} + 1),
              SyscallFailsWithErrno(ENOBUFS));
  // A control pointer that is not mapped.
  EXPECT_THAT(SendControl(p.a.get(), reinterpret_cast<void*>(8), 64),
              SyscallFailsWithErrno(EFAULT));
  // None of that queued anything.
  char ch;
  EXPECT_THAT(recv(p.b.get(), &ch, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixScmTest, IgnoredControlDataStillSends) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  cmsghdr* c = reinterpret_cast<cmsghdr*>(control);
  // Shorter than one header: no control message at all.
  memset(control, 0xff, sizeof(control));
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(cmsghdr) - 1),
              SyscallSucceedsWithValue(1));
  // SCM_RIGHTS with no descriptors.
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(0);
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(control)),
              SyscallSucceedsWithValue(1));
  // A level AF_UNIX does not handle is skipped.
  c->cmsg_level = IPPROTO_TCP;
  c->cmsg_type = 1;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  EXPECT_THAT(SendControl(p.a.get(), control, sizeof(control)),
              SyscallSucceedsWithValue(1));
  for (int i = 0; i < 3; ++i) {
    Received r;
    RecvFds(p.b.get(), 64, MSG_DONTWAIT, &r);
    EXPECT_EQ(r.n, 1) << i;
    EXPECT_EQ(r.cmsgs, 0) << i;
  }
}

TEST(UnixScmTest, PassedListenerAccepts) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("passlistener"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(SendFds(p.a.get(), {l.get()}), SyscallSucceedsWithValue(1));
  l.reset();
  Received r;
  RecvFds(p.b.get(), CMSG_SPACE(sizeof(int)), 0, &r);
  ASSERT_EQ(r.fds.size(), 1u);
  FileDescriptor c = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c.valid()) << strerror(errno);
  FileDescriptor s(accept(r.fds[0], nullptr, nullptr));
  EXPECT_TRUE(s.valid()) << strerror(errno);
}

TEST(UnixScmTest, DescriptorAndCredentialsFromAnotherProcess) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  int one = 1;
  ASSERT_THAT(setsockopt(p.a.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)),
              SyscallSucceeds());
  pid_t child = fork();
  ASSERT_THAT(child, SyscallSucceeds());
  if (child == 0) {
    // A pipe only the child has: the parent gets its read end.
    int fds[2];
    if (pipe(fds) != 0) _exit(2);
    if (SendFds(p.b.get(), {fds[0]}, "pipe") != 4) _exit(3);
    close(fds[0]);
    if (write(fds[1], "from child", 10) != 10) _exit(4);
    _exit(0);
  }
  char buf[16];
  alignas(cmsghdr) char
      control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int))] = {};
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  ASSERT_THAT(recvmsg(p.a.get(), &m, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(m.msg_flags & MSG_CTRUNC, 0);
  int got_fd = -1;
  ucred cred = {};
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_type == SCM_RIGHTS) memcpy(&got_fd, CMSG_DATA(c), sizeof(int));
    if (c->cmsg_type == SCM_CREDENTIALS) {
      memcpy(&cred, CMSG_DATA(c), sizeof(cred));
    }
  }
  FileDescriptor fd(got_fd);
  ASSERT_TRUE(fd.valid());
  EXPECT_EQ(cred.pid, child);
  EXPECT_EQ(cred.uid, getuid());
  int status;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, ExitedWithCode(0));
  char data[16] = {};
  EXPECT_THAT(read(fd.get(), data, sizeof(data)), SyscallSucceedsWithValue(10));
  EXPECT_EQ(std::string(data, 10), "from child");
  EXPECT_THAT(read(fd.get(), data, sizeof(data)), SyscallSucceedsWithValue(0));
}

// recvmsg of `sock` (one message, up to 4 bytes) with `controllen` bytes
// of control buffer: its flags and the msg_controllen it returns.
void RecvWithControl(int sock, size_t controllen, int* flags,
                     size_t* out_controllen) {
  char buf[4];
  alignas(cmsghdr) char control[64] = {};
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = controllen;
  EXPECT_THAT(recvmsg(sock, &m, 0), SyscallSucceedsWithValue(2));
  *flags = m.msg_flags;
  *out_controllen = m.msg_controllen;
}

TEST(UnixScmTest, ControlBufferWithoutRoomIsCtrunc) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  // Descriptors with room for a header only: none installed.
  Pipe pipe;
  ASSERT_THAT(SendFds(p.a.get(), {pipe.r.get()}, "ab"),
              SyscallSucceedsWithValue(2));
  int before = OpenFdCount();
  int flags;
  size_t controllen;
  RecvWithControl(p.b.get(), sizeof(cmsghdr), &flags, &controllen);
  EXPECT_EQ(flags & MSG_CTRUNC, MSG_CTRUNC);
  EXPECT_EQ(controllen, 0u);
  EXPECT_EQ(OpenFdCount(), before);
  // Credentials with less than a header of room.
  int one = 1;
  ASSERT_THAT(setsockopt(p.b.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)),
              SyscallSucceeds());
  ASSERT_THAT(send(p.a.get(), "cd", 2, 0), SyscallSucceedsWithValue(2));
  RecvWithControl(p.b.get(), sizeof(cmsghdr) / 2, &flags, &controllen);
  EXPECT_EQ(flags & MSG_CTRUNC, MSG_CTRUNC);
  EXPECT_EQ(controllen, 0u);
}

}  // namespace
}  // namespace sandbox::testutil
