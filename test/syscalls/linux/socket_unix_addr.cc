// AF_UNIX addresses: unnamed, path and abstract names; autobind (an
// address of only the family, or SO_PASSCRED before connect) and its
// "\0" + 5 hex digits name; the lengths getsockname, getpeername, accept and
// recvfrom report; bind errors (EADDRINUSE, EINVAL on rebinding or a bad
// family or length, ENOENT); the socket inode bind creates (mode from the
// umask), connect's permission check, unlink and rename of a bound path;
// connect errors (ENOENT, ECONNREFUSED, EPROTOTYPE); /proc/net/unix; abstract
// names per network namespace.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr socklen_t kPathOffset = offsetof(sockaddr_un, sun_path);

// getsockname of fd: its length and bytes.
struct Name {
  socklen_t len = 0;
  sockaddr_un addr = {};
};
Name SockName(int fd) {
  Name n;
  n.len = sizeof(n.addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&n.addr), &n.len) != 0) {
    ADD_FAILURE() << "getsockname: " << strerror(errno);
  }
  return n;
}
Name PeerName(int fd) {
  Name n;
  n.len = sizeof(n.addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&n.addr), &n.len) != 0) {
    ADD_FAILURE() << "getpeername: " << strerror(errno);
  }
  return n;
}

// Whether `n` is an autobind name: a NUL then five lowercase hex digits.
bool IsAutobindName(const Name& n) {
  if (n.len != kPathOffset + 6 || n.addr.sun_family != AF_UNIX) return false;
  if (n.addr.sun_path[0] != '\0') return false;
  for (int i = 1; i <= 5; ++i) {
    char c = n.addr.sun_path[i];
    if (!isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) {
      return false;
    }
  }
  return true;
}

// A TempDir() socket path removed when the test ends.
struct ScopedPath {
  ScopedPath() : path(SocketPath()), addr(UnixAddr::Path(path)) {}
  ~ScopedPath() { unlink(path.c_str()); }
  std::string path;
  UnixAddr addr;
};

// Creates an empty regular file at `path`.
bool CreateRegularFile(const std::string& path) {
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    ADD_FAILURE() << "creating " << path << ": " << strerror(errno);
    return false;
  }
  close(fd);
  return true;
}

TEST(UnixAddrTest, UnboundSocketHasOnlyTheFamily) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    FileDescriptor fd = UnixSocket(type);
    ASSERT_TRUE(fd.valid());
    Name n = SockName(fd.get());
    EXPECT_EQ(n.len, sizeof(sa_family_t)) << type;
    EXPECT_EQ(n.addr.sun_family, AF_UNIX);
  }
}

TEST(UnixAddrTest, SocketpairEndsAreUnnamedBothWays) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(SockName(p.a.get()).len, sizeof(sa_family_t));
  Name peer = PeerName(p.a.get());
  EXPECT_EQ(peer.len, sizeof(sa_family_t));
  EXPECT_EQ(peer.addr.sun_family, AF_UNIX);
}

TEST(UnixAddrTest, PathNameLengthIncludesTheNul) {
  ScopedPath sp;
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  // Pass the whole structure: Linux still reports the string's length.
  ASSERT_THAT(bind(fd.get(), sp.addr.sa(), sizeof(sockaddr_un)),
              SyscallSucceeds());
  Name n = SockName(fd.get());
  EXPECT_EQ(n.len, kPathOffset + sp.path.size() + 1);
  EXPECT_EQ(std::string(n.addr.sun_path), sp.path);
}

TEST(UnixAddrTest, PathWithoutTerminatorInTheLength) {
  ScopedPath sp;
  FileDescriptor fd = UnixSocket(SOCK_DGRAM);
  // The length stops before the NUL: the name is the same.
  ASSERT_THAT(bind(fd.get(), sp.addr.sa(), sp.addr.len - 1), SyscallSucceeds());
  Name n = SockName(fd.get());
  EXPECT_EQ(n.len, sp.addr.len);
  EXPECT_EQ(std::string(n.addr.sun_path), sp.path);
}

TEST(UnixAddrTest, AbstractNameIsExactlyTheBytesGiven) {
  // Abstract names may hold NULs and need no terminator.
  std::string name = AbstractName("abs");
  name.push_back('\0');
  name += "tail";
  UnixAddr a = UnixAddr::Abstract(name);
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  ASSERT_THAT(bind(fd.get(), a.sa(), a.len), SyscallSucceeds());
  Name n = SockName(fd.get());
  ASSERT_EQ(n.len, a.len);
  EXPECT_EQ(memcmp(&n.addr, &a.addr, a.len), 0);
  // Nothing appears in the file system.
  EXPECT_THAT(access(name.c_str(), F_OK), SyscallFailsWithErrno(ENOENT));
}

TEST(UnixAddrTest, AutobindWithOnlyTheFamily) {
  FileDescriptor fd = UnixSocket(SOCK_DGRAM);
  UnixAddr u = UnixAddr::Unnamed();
  ASSERT_THAT(bind(fd.get(), u.sa(), u.len), SyscallSucceeds());
  Name n = SockName(fd.get());
  EXPECT_TRUE(IsAutobindName(n))
      << "len " << n.len << " name "
      << std::string(n.addr.sun_path + 1,
                     n.len > kPathOffset + 1 ? n.len - kPathOffset - 1 : 0);
  // Another autobind gets another name.
  FileDescriptor fd2 = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(fd2.get(), u.sa(), u.len), SyscallSucceeds());
  Name n2 = SockName(fd2.get());
  EXPECT_TRUE(IsAutobindName(n2));
  EXPECT_NE(memcmp(n.addr.sun_path, n2.addr.sun_path, 6), 0);
  // The name is reachable like any abstract one.
  UnixAddr target;
  target.addr = n.addr;
  target.len = n.len;
  ASSERT_THAT(sendto(fd2.get(), "a", 1, 0, target.sa(), target.len),
              SyscallSucceedsWithValue(1));
  char c;
  sockaddr_un from = {};
  socklen_t flen = sizeof(from);
  ASSERT_THAT(
      recvfrom(fd.get(), &c, 1, 0, reinterpret_cast<sockaddr*>(&from), &flen),
      SyscallSucceedsWithValue(1));
  EXPECT_EQ(flen, n2.len);
  EXPECT_EQ(memcmp(&from, &n2.addr, flen), 0);
}

TEST(UnixAddrTest, PasscredAutobindsOnConnectAndSend) {
  UnixAddr la = UnixAddr::Abstract(AbstractName("pcl"));
  FileDescriptor l = Listener(SOCK_STREAM, la);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = UnixSocket(SOCK_STREAM);
  int one = 1;
  ASSERT_THAT(setsockopt(c.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)),
              SyscallSucceeds());
  EXPECT_EQ(SockName(c.get()).len, sizeof(sa_family_t));
  ASSERT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
  EXPECT_TRUE(IsAutobindName(SockName(c.get())));

  UnixAddr ra = UnixAddr::Abstract(AbstractName("pcr"));
  FileDescriptor r = UnixSocket(SOCK_DGRAM), s = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(r.get(), ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)),
              SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(1));
  EXPECT_TRUE(IsAutobindName(SockName(s.get())));
}

TEST(UnixAddrTest, GetsocknameTruncatesButReportsTheFullLength) {
  ScopedPath sp;
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  ASSERT_THAT(bind(fd.get(), sp.addr.sa(), sp.addr.len), SyscallSucceeds());
  char buf[sizeof(sockaddr_un)];
  memset(buf, 'X', sizeof(buf));
  socklen_t len = kPathOffset + 2;
  ASSERT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(buf), &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sp.addr.len);
  EXPECT_EQ(buf[kPathOffset], sp.path[0]);
  EXPECT_EQ(buf[kPathOffset + 1], sp.path[1]);
  EXPECT_EQ(buf[kPathOffset + 2], 'X');  // Nothing past the given length.
  socklen_t bad = static_cast<socklen_t>(-1);
  EXPECT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(buf), &bad),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UnixAddrTest, AcceptAndPeerNamesOfAPathConnection) {
  ScopedPath sp;
  FileDescriptor l = Listener(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(c.valid()) << strerror(errno);
  sockaddr_un from;
  memset(&from, 0x55, sizeof(from));
  socklen_t flen = sizeof(from);
  FileDescriptor s(accept(l.get(), reinterpret_cast<sockaddr*>(&from), &flen));
  ASSERT_TRUE(s.valid());
  EXPECT_EQ(flen, sizeof(sa_family_t));  // The connector is unnamed.
  // The connector's peer and the accepted socket's own name: the listener's.
  Name peer = PeerName(c.get());
  EXPECT_EQ(peer.len, sp.addr.len);
  EXPECT_EQ(std::string(peer.addr.sun_path), sp.path);
  Name own = SockName(s.get());
  EXPECT_EQ(own.len, sp.addr.len);
  EXPECT_EQ(std::string(own.addr.sun_path), sp.path);
  EXPECT_EQ(PeerName(s.get()).len, sizeof(sa_family_t));
  EXPECT_EQ(SockName(c.get()).len, sizeof(sa_family_t));
}

TEST(UnixAddrTest, AcceptNamesABoundConnector) {
  UnixAddr la = UnixAddr::Abstract(AbstractName("al"));
  UnixAddr ca = UnixAddr::Abstract(AbstractName("ac"));
  FileDescriptor l = Listener(SOCK_STREAM, la);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = UnixSocket(SOCK_STREAM);
  ASSERT_THAT(bind(c.get(), ca.sa(), ca.len), SyscallSucceeds());
  ASSERT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
  sockaddr_un from = {};
  socklen_t flen = sizeof(from);
  FileDescriptor s(accept(l.get(), reinterpret_cast<sockaddr*>(&from), &flen));
  ASSERT_TRUE(s.valid());
  ASSERT_EQ(flen, ca.len);
  EXPECT_EQ(memcmp(&from, &ca.addr, flen), 0);
  Name peer = PeerName(s.get());
  ASSERT_EQ(peer.len, ca.len);
  EXPECT_EQ(memcmp(&peer.addr, &ca.addr, ca.len), 0);
}

TEST(UnixAddrTest, BindCreatesASocketInodeWithTheUmask) {
  ScopedPath sp;
  mode_t old = umask(027);
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  int r = bind(fd.get(), sp.addr.sa(), sp.addr.len);
  umask(old);
  ASSERT_THAT(r, SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(lstat(sp.path.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISSOCK(st.st_mode)) << std::oct << st.st_mode;
  EXPECT_EQ(st.st_mode & 07777, 0750u) << std::oct << st.st_mode;
  // The file is not the socket's own (sockfs) inode.
  struct stat self;
  ASSERT_THAT(fstat(fd.get(), &self), SyscallSucceeds());
  EXPECT_FALSE(self.st_dev == st.st_dev && self.st_ino == st.st_ino);
  // A socket inode cannot be opened.
  EXPECT_THAT(open(sp.path.c_str(), O_RDWR | O_CLOEXEC),
              SyscallFailsWithErrno(ENXIO));
}

TEST(UnixAddrTest, BindToAnExistingPathIsEaddrinuse) {
  ScopedPath file;
  ASSERT_TRUE(CreateRegularFile(file.path));
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  const UnixAddr& fa = file.addr;
  EXPECT_THAT(bind(fd.get(), fa.sa(), fa.len),
              SyscallFailsWithErrno(EADDRINUSE));
  // A stale socket file (its socket closed) is in use too.
  ScopedPath sp;
  {
    FileDescriptor first = UnixSocket(SOCK_STREAM);
    ASSERT_THAT(bind(first.get(), sp.addr.sa(), sp.addr.len),
                SyscallSucceeds());
  }
  EXPECT_THAT(bind(fd.get(), sp.addr.sa(), sp.addr.len),
              SyscallFailsWithErrno(EADDRINUSE));
  // After a failed bind the socket can still bind elsewhere.
  ScopedPath other;
  EXPECT_THAT(bind(fd.get(), other.addr.sa(), other.addr.len),
              SyscallSucceeds());
}

TEST(UnixAddrTest, AbstractNameInUseIsEaddrinusePerType) {
  UnixAddr a = UnixAddr::Abstract(AbstractName("inuse"));
  FileDescriptor s1 = UnixSocket(SOCK_STREAM), s2 = UnixSocket(SOCK_STREAM);
  ASSERT_THAT(bind(s1.get(), a.sa(), a.len), SyscallSucceeds());
  EXPECT_THAT(bind(s2.get(), a.sa(), a.len), SyscallFailsWithErrno(EADDRINUSE));
  // Abstract names are per socket type.
  FileDescriptor d = UnixSocket(SOCK_DGRAM);
  EXPECT_THAT(bind(d.get(), a.sa(), a.len), SyscallSucceeds());
  // Closing the socket frees its abstract name at once.
  s1.reset();
  EXPECT_THAT(bind(s2.get(), a.sa(), a.len), SyscallSucceeds());
}

TEST(UnixAddrTest, RebindingIsEinval) {
  UnixAddr a = UnixAddr::Abstract(AbstractName("re1"));
  UnixAddr b = UnixAddr::Abstract(AbstractName("re2"));
  FileDescriptor fd = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(fd.get(), a.sa(), a.len), SyscallSucceeds());
  EXPECT_THAT(bind(fd.get(), b.sa(), b.len), SyscallFailsWithErrno(EINVAL));
  // An autobind request on a bound socket succeeds and changes nothing.
  UnixAddr u = UnixAddr::Unnamed();
  EXPECT_THAT(bind(fd.get(), u.sa(), u.len), SyscallSucceeds());
  Name n = SockName(fd.get());
  ASSERT_EQ(n.len, a.len);
  EXPECT_EQ(memcmp(&n.addr, &a.addr, a.len), 0);
  // A socketpair end is unnamed and may bind once.
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(bind(p.a.get(), b.sa(), b.len), SyscallSucceeds());
  EXPECT_THAT(bind(p.a.get(), a.sa(), a.len), SyscallFailsWithErrno(EINVAL));
  // An autobound socket cannot take a name afterwards.
  FileDescriptor ab = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(ab.get(), u.sa(), u.len), SyscallSucceeds());
  UnixAddr c = UnixAddr::Abstract(AbstractName("re3"));
  EXPECT_THAT(bind(ab.get(), c.sa(), c.len), SyscallFailsWithErrno(EINVAL));
}

TEST(UnixAddrTest, BadAddressesAreEinval) {
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  UnixAddr a = UnixAddr::Abstract(AbstractName("bad"));
  // Shorter than the family.
  EXPECT_THAT(bind(fd.get(), a.sa(), 1), SyscallFailsWithErrno(EINVAL));
  // Longer than sockaddr_un.
  sockaddr_storage big = {};
  memcpy(&big, &a.addr, sizeof(a.addr));
  EXPECT_THAT(bind(fd.get(), reinterpret_cast<sockaddr*>(&big),
                   sizeof(sockaddr_un) + 1),
              SyscallFailsWithErrno(EINVAL));
  // Another family.
  UnixAddr inet = a;
  inet.addr.sun_family = AF_INET;
  EXPECT_THAT(bind(fd.get(), inet.sa(), inet.len),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(connect(fd.get(), a.sa(), 1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(connect(fd.get(), reinterpret_cast<sockaddr*>(&big),
                      sizeof(sockaddr_un) + 1),
              SyscallFailsWithErrno(EINVAL));
  // A bad pointer.
  EXPECT_THAT(bind(fd.get(), reinterpret_cast<sockaddr*>(8), a.len),
              SyscallFailsWithErrno(EFAULT));
  // The socket is still unbound.
  EXPECT_EQ(SockName(fd.get()).len, sizeof(sa_family_t));
}

TEST(UnixAddrTest, BindInAMissingDirectoryIsEnoent) {
  UnixAddr a = UnixAddr::Path(SocketPath() + "/sub");
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(bind(fd.get(), a.sa(), a.len), SyscallFailsWithErrno(ENOENT));
}

TEST(UnixAddrTest, ConnectErrors) {
  // No such file.
  UnixAddr missing = UnixAddr::Path(SocketPath());
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(connect(fd.get(), missing.sa(), missing.len),
              SyscallFailsWithErrno(ENOENT));
  // A file that is not a socket.
  ScopedPath file;
  ASSERT_TRUE(CreateRegularFile(file.path));
  EXPECT_THAT(connect(fd.get(), file.addr.sa(), file.addr.len),
              SyscallFailsWithErrno(ECONNREFUSED));
  // A socket that is bound but not listening, and one that is gone.
  ScopedPath sp;
  {
    FileDescriptor bound = UnixSocket(SOCK_STREAM);
    ASSERT_THAT(bind(bound.get(), sp.addr.sa(), sp.addr.len),
                SyscallSucceeds());
    EXPECT_THAT(connect(fd.get(), sp.addr.sa(), sp.addr.len),
                SyscallFailsWithErrno(ECONNREFUSED));
  }
  EXPECT_THAT(connect(fd.get(), sp.addr.sa(), sp.addr.len),
              SyscallFailsWithErrno(ECONNREFUSED));
  // An abstract name nobody holds.
  UnixAddr abs = UnixAddr::Abstract(AbstractName("none"));
  EXPECT_THAT(connect(fd.get(), abs.sa(), abs.len),
              SyscallFailsWithErrno(ECONNREFUSED));
  // Still usable afterwards.
  UnixAddr la = UnixAddr::Abstract(AbstractName("after"));
  FileDescriptor l = Listener(SOCK_STREAM, la);
  ASSERT_TRUE(l.valid());
  EXPECT_THAT(connect(fd.get(), la.sa(), la.len), SyscallSucceeds());
}

TEST(UnixAddrTest, ConnectAcrossTypesOverAPathIsEprototype) {
  ScopedPath dg;
  FileDescriptor d = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(d.get(), dg.addr.sa(), dg.addr.len), SyscallSucceeds());
  FileDescriptor s = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(connect(s.get(), dg.addr.sa(), dg.addr.len),
              SyscallFailsWithErrno(EPROTOTYPE));
  ScopedPath st;
  FileDescriptor l = Listener(SOCK_STREAM, st.addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor d2 = UnixSocket(SOCK_DGRAM);
  EXPECT_THAT(connect(d2.get(), st.addr.sa(), st.addr.len),
              SyscallFailsWithErrno(EPROTOTYPE));
  EXPECT_THAT(sendto(d2.get(), "x", 1, 0, st.addr.sa(), st.addr.len),
              SyscallFailsWithErrno(EPROTOTYPE));
}

TEST(UnixAddrTest, ConnectNeedsWritePermission) {
  ScopedPath sp;
  FileDescriptor l = Listener(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(l.valid());
  ASSERT_THAT(chmod(sp.path.c_str(), 0555), SyscallSucceeds());
  // Without CAP_DAC_OVERRIDE the owner's bits decide: r-x is not enough.
  int status = InForkedChild([&] {
    if (!DropCapabilities(/*keep_permitted=*/false)) _exit(10);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) _exit(11);
    if (connect(fd, sp.addr.sa(), sp.addr.len) != -1) _exit(12);
    if (errno != EACCES) _exit(13);
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
    GTEST_SKIP() << "cannot drop capabilities here";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
  // With write permission the same unprivileged connect works.
  ASSERT_THAT(chmod(sp.path.c_str(), 0200), SyscallSucceeds());
  status = InForkedChild([&] {
    if (!DropCapabilities(false)) _exit(10);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, sp.addr.sa(), sp.addr.len) != 0) _exit(20 + errno % 100);
  });
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(UnixAddrTest, DatagramSendNeedsWritePermission) {
  ScopedPath sp;
  FileDescriptor r = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(r.get(), sp.addr.sa(), sp.addr.len), SyscallSucceeds());
  ASSERT_THAT(chmod(sp.path.c_str(), 0444), SyscallSucceeds());
  int status = InForkedChild([&] {
    if (!DropCapabilities(false)) _exit(10);
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0) _exit(11);
    if (sendto(fd, "x", 1, 0, sp.addr.sa(), sp.addr.len) != -1) _exit(12);
    if (errno != EACCES) _exit(13);
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
    GTEST_SKIP() << "cannot drop capabilities here";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(UnixAddrTest, UnlinkedPathKeepsTheSocketButNotTheName) {
  ScopedPath sp;
  FileDescriptor l = Listener(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c1 = ConnectTo(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(c1.valid());
  ASSERT_THAT(unlink(sp.path.c_str()), SyscallSucceeds());
  // New connects find nothing; the old connection and the name remain.
  FileDescriptor c2 = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(connect(c2.get(), sp.addr.sa(), sp.addr.len),
              SyscallFailsWithErrno(ENOENT));
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  EXPECT_THAT(send(c1.get(), "u", 1, 0), SyscallSucceedsWithValue(1));
  char c;
  EXPECT_THAT(recv(s.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(std::string(SockName(l.get()).addr.sun_path), sp.path);
  // The path can be bound again by another socket.
  FileDescriptor l2 = Listener(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(l2.valid());
  EXPECT_THAT(connect(c2.get(), sp.addr.sa(), sp.addr.len), SyscallSucceeds());
  FileDescriptor s2(accept(l2.get(), nullptr, nullptr));
  EXPECT_TRUE(s2.valid());
}

TEST(UnixAddrTest, RenamedPathReachesTheSameSocket) {
  ScopedPath from, to;
  FileDescriptor l = Listener(SOCK_STREAM, from.addr);
  ASSERT_TRUE(l.valid());
  ASSERT_THAT(rename(from.path.c_str(), to.path.c_str()), SyscallSucceeds());
  FileDescriptor c = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(connect(c.get(), from.addr.sa(), from.addr.len),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(connect(c.get(), to.addr.sa(), to.addr.len), SyscallSucceeds());
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  // getsockname keeps the name it was bound with.
  EXPECT_EQ(std::string(SockName(l.get()).addr.sun_path), from.path);
  EXPECT_EQ(std::string(PeerName(c.get()).addr.sun_path), from.path);
}

TEST(UnixAddrTest, HardLinkReachesTheSameSocket) {
  ScopedPath orig, alias;
  FileDescriptor l = Listener(SOCK_STREAM, orig.addr);
  ASSERT_TRUE(l.valid());
  ASSERT_THAT(link(orig.path.c_str(), alias.path.c_str()), SyscallSucceeds());
  FileDescriptor c = ConnectTo(SOCK_STREAM, alias.addr);
  ASSERT_TRUE(c.valid()) << strerror(errno);
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  EXPECT_TRUE(s.valid());
}

TEST(UnixAddrTest, RelativePathIsResolvedFromTheWorkingDirectory) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor cwd(open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(cwd.valid());
  ASSERT_THAT(chdir(dir.path().c_str()), SyscallSucceeds());
  UnixAddr rel = UnixAddr::Path("rel.sock");
  FileDescriptor l = Listener(SOCK_STREAM, rel);
  ASSERT_THAT(fchdir(cwd.get()), SyscallSucceeds());
  ASSERT_TRUE(l.valid());
  struct stat st;
  EXPECT_THAT(stat((dir.path() + "/rel.sock").c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  // getsockname gives the name as bound: relative.
  EXPECT_EQ(std::string(SockName(l.get()).addr.sun_path), "rel.sock");
}

// The lines of /proc/net/unix whose inode column is `ino`.
std::vector<std::string> ProcNetUnixLines(ino_t ino) {
  std::vector<std::string> out;
  std::string all = ReadFileOrEmpty("/proc/net/unix");
  size_t pos = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    char num[32];
    unsigned refs, proto, flags, type, st;
    unsigned long inode;
    if (sscanf(line.c_str(), "%31s %x %x %x %x %x %lu", num, &refs, &proto,
               &flags, &type, &st, &inode) == 7 &&
        inode == ino) {
      out.push_back(line);
    }
  }
  return out;
}

TEST(UnixAddrTest, ProcNetUnixListsBoundAndConnectedSockets) {
  if (ReadFileOrEmpty("/proc/net/unix").empty()) {
    GTEST_SKIP() << "no /proc/net/unix";
  }
  ScopedPath sp;
  FileDescriptor l = Listener(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(l.valid());
  struct stat st;
  ASSERT_THAT(fstat(l.get(), &st), SyscallSucceeds());
  std::vector<std::string> lines = ProcNetUnixLines(st.st_ino);
  ASSERT_EQ(lines.size(), 1u);
  unsigned refs, proto, flags, type, state;
  unsigned long inode;
  char path[256] = {};
  ASSERT_EQ(sscanf(lines[0].c_str(), "%*s %x %x %x %x %x %lu %255s", &refs,
                   &proto, &flags, &type, &state, &inode, path),
            7)
      << lines[0];
  EXPECT_EQ(flags, 0x10000u) << lines[0];  // __SO_ACCEPTCON: listening.
  EXPECT_EQ(type, static_cast<unsigned>(SOCK_STREAM)) << lines[0];
  EXPECT_EQ(state, 1u) << lines[0];  // SS_UNCONNECTED.
  EXPECT_EQ(std::string(path), sp.path);
  // A connected datagram pair: state SS_CONNECTED, no path.
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(fstat(p.a.get(), &st), SyscallSucceeds());
  lines = ProcNetUnixLines(st.st_ino);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(sscanf(lines[0].c_str(), "%*s %x %x %x %x %x %lu", &refs, &proto,
                   &flags, &type, &state, &inode),
            6);
  EXPECT_EQ(type, static_cast<unsigned>(SOCK_DGRAM)) << lines[0];
  EXPECT_EQ(state, 3u) << lines[0];  // SS_CONNECTED.
  EXPECT_EQ(flags, 0u) << lines[0];
  // An abstract name is shown with '@' for its leading NUL.
  UnixAddr abs = UnixAddr::Abstract(AbstractName("proc"));
  FileDescriptor a = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(a.get(), abs.sa(), abs.len), SyscallSucceeds());
  ASSERT_THAT(fstat(a.get(), &st), SyscallSucceeds());
  lines = ProcNetUnixLines(st.st_ino);
  ASSERT_EQ(lines.size(), 1u);
  std::string want = " @" + std::string(abs.addr.sun_path + 1);
  EXPECT_EQ(lines[0].substr(lines[0].size() - want.size()), want) << lines[0];
  // A closed socket is gone from the list.
  ino_t gone = st.st_ino;
  a.reset();
  EXPECT_TRUE(ProcNetUnixLines(gone).empty());
}

TEST(UnixAddrTest, AbstractNamesArePerNetworkNamespace) {
  UnixAddr abs = UnixAddr::Abstract(AbstractName("netns"));
  FileDescriptor l = Listener(SOCK_STREAM, abs);
  ASSERT_TRUE(l.valid());
  ScopedPath sp;
  FileDescriptor pl = Listener(SOCK_STREAM, sp.addr);
  ASSERT_TRUE(pl.valid());
  int status = InForkedChild([&] {
    if (unshare(CLONE_NEWNET) != 0) _exit(10);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) _exit(11);
    // The parent's abstract name is not in this namespace...
    if (connect(fd, abs.sa(), abs.len) != -1 || errno != ECONNREFUSED) {
      _exit(12);
    }
    // ...so it can be bound here.
    int b = socket(AF_UNIX, SOCK_STREAM, 0);
    if (bind(b, abs.sa(), abs.len) != 0) _exit(13);
    // A path name is reachable from any network namespace.
    if (connect(fd, sp.addr.sa(), sp.addr.len) != 0) _exit(14);
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
    GTEST_SKIP() << "unshare(CLONE_NEWNET) not permitted here";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
