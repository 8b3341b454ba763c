// AF_UNIX under hostile input: whatever a guest does, the kernel stays
// whole, answers with Linux's errno and keeps nothing it should have let go.
//
//  - Descriptors sent around cycles of sockets, then everything closed (a
//    socket in its own queue, two-cycles, long rings, a long chain that is
//    not a cycle, a listener whose embryo holds it, epoll descriptors of
//    the sockets in flight, peeked copies, many cycles from two threads):
//    the collector frees them. Proof: a pipe's write end travels inside the
//    cycle, so its read end sees POLLHUP when the cycle is collected; the
//    sockets' inodes (and names) leave /proc/net/unix; /proc/self/fd has
//    the count it had before.
//  - Datagram floods (non-blocking until EAGAIN, descriptors in the flood,
//    blocked senders killed).
//  - 10,000 connects to a listener with backlog 1 (non-blocking: EAGAIN
//    beyond the backlog; blocking ones in threads, interrupted by a signal
//    or refused when the listener closes).
//  - Garbage msghdr, iovec, cmsg and address lengths, sendmmsg/recvmmsg
//    with huge counts, and a seeded randomized msghdr test whose every
//    errno must be one Linux can return.
//
// Linux's collector runs only when some unix socket is released (anywhere
// on the host: on a busy one that is soon, on an idle one or alone in a
// sandbox maybe never) or many descriptors are in flight, from a work item
// since 6.10, and a last fput may be deferred too. So each wait for a
// collection releases a fresh socket to start one (TriggerCollection), and
// is bounded (10 s).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr int kWaitMs = 10000;  // bound of every wait for a collection

// ---- Observing leaks. ----

// The descriptors open in this process: the entries of /proc/self/fd, less
// the one the listing itself holds.
int FdCount() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;
}

ino_t InodeOf(int fd) {
  struct stat st = {};
  if (fstat(fd, &st) != 0) return 0;
  return st.st_ino;
}

struct UnixLine {
  uint64_t inode = 0;
  std::string path;
};

// /proc/net/unix, parsed ("Num RefCount Protocol Flags Type St Inode
// Path").
std::vector<UnixLine> ProcNetUnix() {
  std::vector<UnixLine> out;
  std::ifstream f("/proc/net/unix");
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string num, ref, proto, flags, type, st;
    UnixLine u;
    if (!(in >> num >> ref >> proto >> flags >> type >> st >> u.inode)) {
      continue;
    }
    in >> u.path;
    out.push_back(u);
  }
  return out;
}

// What of `inodes` and of the sockets named `names` (as /proc/net/unix
// prints them: "@name" for an abstract one) is still listed.
std::string StillListed(const std::set<uint64_t>& inodes,
                        const std::set<std::string>& names) {
  std::string left;
  for (const UnixLine& u : ProcNetUnix()) {
    if ((u.inode != 0 && inodes.count(u.inode)) || names.count(u.path)) {
      left += std::to_string(u.inode) + ":" + u.path + " ";
    }
  }
  return left;
}

// Starts the unix garbage collector as Linux does: by releasing a unix
// socket (unix_release_sock runs it when anything is in flight).
void TriggerCollection() {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) close(fd);
}

// Waits (bounded) until none of them is listed any more.
::testing::AssertionResult GoneFromProcNetUnix(
    const std::set<uint64_t>& inodes, const std::set<std::string>& names) {
  std::string left;
  for (int waited = 0; waited <= kWaitMs; waited += 10) {
    left = StillListed(inodes, names);
    if (left.empty()) return ::testing::AssertionSuccess();
    TriggerCollection();
    usleep(10000);
  }
  return ::testing::AssertionFailure()
         << "still in /proc/net/unix after " << kWaitMs << " ms: " << left;
}

// Waits (bounded) for `rfd`, a pipe's read end, to see its last writer go:
// POLLHUP and then EOF (after reading what is in the pipe).
::testing::AssertionResult HupWithin(int rfd, int ms = kWaitMs) {
  pollfd p = {rfd, POLLIN, 0};
  int r = 0;
  for (int waited = 0; waited < ms && r == 0; waited += 20) {
    TriggerCollection();
    r = poll(&p, 1, 20);
  }
  if (r != 1) {
    return ::testing::AssertionFailure()
           << "no POLLHUP within " << ms << " ms (poll returned " << r
           << "): a descriptor in flight was not released";
  }
  if (!(p.revents & POLLHUP)) {
    // Data first (a writer wrote); then the hang-up.
    char buf[512];
    while (read(rfd, buf, sizeof(buf)) > 0) {
    }
    p.revents = 0;
    if (poll(&p, 1, ms) != 1 || !(p.revents & POLLHUP)) {
      return ::testing::AssertionFailure() << "revents " << p.revents;
    }
  }
  char c;
  int fl = fcntl(rfd, F_GETFL);
  fcntl(rfd, F_SETFL, fl | O_NONBLOCK);
  ssize_t n;
  while ((n = read(rfd, &c, 1)) > 0) {
  }
  fcntl(rfd, F_SETFL, fl);
  if (n != 0) {
    return ::testing::AssertionFailure()
           << "read gave " << n << " errno " << errno << ", want EOF";
  }
  return ::testing::AssertionSuccess();
}

// Not hung up yet: some writer is still alive.
bool StillOpen(int rfd) {
  pollfd p = {rfd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

// Records the descriptor count at construction and, at the end of the
// test, that it is back and that every socket noted is gone from
// /proc/net/unix.
class LeakCheck {
 public:
  LeakCheck() : fds_(FdCount()) {}
  ~LeakCheck() {
    EXPECT_TRUE(GoneFromProcNetUnix(inodes_, names_));
    EXPECT_EQ(FdCount(), fds_) << "descriptors leaked into the table";
  }
  // Call before the descriptor is closed or sent away.
  void Note(int fd) { inodes_.insert(InodeOf(fd)); }
  void NoteName(const std::string& procname) { names_.insert(procname); }

 private:
  int fds_;
  std::set<uint64_t> inodes_;
  std::set<std::string> names_;
};

// An abstract name no other process uses: AbstractName's pid is not
// unique when runs in separate PID namespaces share a network namespace
// (parallel tests under Bazel's sandbox), so a random tag is added.
std::string UniqueName(const std::string& tag) {
  static const std::string token = [] {
    uint64_t v = 0;
    FILE* f = fopen("/dev/urandom", "r");
    if (f == nullptr || fread(&v, sizeof(v), 1, f) != 1) {
      v = static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count());
    }
    if (f != nullptr) fclose(f);
    char buf[17];
    snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
    return std::string(buf);
  }();
  return AbstractName(tag) + "." + token;
}

// ---- Sending descriptors. ----

ssize_t SendFds(int sock, const std::vector<int>& fds, int flags = 0,
                const char* data = "x", size_t len = 1) {
  std::vector<char> control(
      CMSG_SPACE(sizeof(int) * std::max<size_t>(fds.size(), 1)));
  iovec iov = {const_cast<char*>(data), len};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (!fds.empty()) {
    m.msg_control = control.data();
    m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return sendmsg(sock, &m, flags);
}

// Receives one message and closes whatever descriptors came with it; the
// number of descriptors, or -1 (errno kept).
int RecvAndCloseFds(int sock, int flags) {
  char buf[256];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 253)];
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  if (recvmsg(sock, &m, flags) < 0) return -1;
  int n = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (int i = 0; i < k; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
      close(fd);
      ++n;
    }
  }
  return n;
}

const int kTypes[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};

// How many unix sockets this test may put in flight at once: Linux's
// too_many_unix_fds allows RLIMIT_NOFILE per user (without
// CAP_SYS_RESOURCE); keep well under it.
int InflightBudget(int want) {
  rlimit rl = {};
  getrlimit(RLIMIT_NOFILE, &rl);
  const long cap = static_cast<long>(rl.rlim_cur) / 2 - 64;
  return static_cast<int>(std::max<long>(8, std::min<long>(want, cap)));
}

// ---- 1. Cycles of sockets in flight. ----

// A socket in its own receive queue, for each type: the pair's b end is
// sent over a (so it lands in b's queue) with the pipe's write end.
TEST(UnixHostileCycleTest, SocketInItsOwnQueue) {
  for (int type : kTypes) {
    LeakCheck leaks;
    Pipe pipe;
    {
      SocketPair p(type);
      ASSERT_TRUE(p.ok());
      leaks.Note(p.a.get());
      leaks.Note(p.b.get());
      ASSERT_THAT(SendFds(p.a.get(), {p.b.get(), pipe.w.get()}),
                  SyscallSucceedsWithValue(1));
      pipe.w.reset();
      // b's only reference is now in its own queue: garbage (a's being
      // b's peer is no file reference), collected by the next collection
      // at the latest, which a's close starts.
      p.b.reset();
    }
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// A datagram socket bound to a name sends itself to itself.
TEST(UnixHostileCycleTest, DatagramSocketSendsItselfToItself) {
  LeakCheck leaks;
  Pipe pipe;
  const std::string name = UniqueName("self");
  UnixAddr addr = UnixAddr::Abstract(name);
  leaks.NoteName("@" + name);
  {
    FileDescriptor s = UnixSocket(SOCK_DGRAM);
    ASSERT_TRUE(s.valid());
    leaks.Note(s.get());
    ASSERT_THAT(bind(s.get(), addr.sa(), addr.len), SyscallSucceeds());
    char control[CMSG_SPACE(2 * sizeof(int))] = {};
    int fds[2] = {s.get(), pipe.w.get()};
    iovec iov = {const_cast<char*>("s"), 1};
    msghdr m = {};
    m.msg_name = const_cast<sockaddr*>(addr.sa());
    m.msg_namelen = addr.len;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(c), fds, sizeof(fds));
    ASSERT_THAT(sendmsg(s.get(), &m, 0), SyscallSucceedsWithValue(1));
    pipe.w.reset();
  }
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

// Each end in the other's queue, for each type, the pipe end in one.
TEST(UnixHostileCycleTest, TwoCycleOfEachType) {
  for (int type : kTypes) {
    LeakCheck leaks;
    Pipe pipe;
    {
      SocketPair p(type);
      ASSERT_TRUE(p.ok());
      leaks.Note(p.a.get());
      leaks.Note(p.b.get());
      ASSERT_THAT(SendFds(p.a.get(), {p.a.get(), pipe.w.get()}),
                  SyscallSucceedsWithValue(1));
      ASSERT_THAT(SendFds(p.b.get(), {p.b.get()}), SyscallSucceedsWithValue(1));
      pipe.w.reset();
      p.a.reset();
      // b still open: it can still read a (and the pipe end) out.
      EXPECT_TRUE(StillOpen(pipe.r.get())) << type;
    }
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// A ring of pairs: pair i's b queue holds both ends of pair i+1, the last
// holds pair 0's, and the pipe end rides in the middle of the ring.
TEST(UnixHostileCycleTest, LongRingOfPairs) {
  const int n = InflightBudget(200) / 2;
  for (int type : kTypes) {
    LeakCheck leaks;
    Pipe pipe;
    std::vector<SocketPair> pairs;
    pairs.reserve(n);
    for (int i = 0; i < n; ++i) {
      pairs.emplace_back(type);
      ASSERT_TRUE(pairs.back().ok());
      leaks.Note(pairs.back().a.get());
      leaks.Note(pairs.back().b.get());
    }
    for (int i = 0; i < n; ++i) {
      SocketPair& next = pairs[(i + 1) % n];
      std::vector<int> fds = {next.a.get(), next.b.get()};
      if (i == n / 2) fds.push_back(pipe.w.get());
      ASSERT_THAT(SendFds(pairs[i].a.get(), fds), SyscallSucceedsWithValue(1))
          << type << " pair " << i;
    }
    pipe.w.reset();
    pairs.clear();
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// A chain that is no cycle: pair i+1 travels in pair i's queue, the
// deepest one holds the pipe end, and only pair 0 stays open. Closing it
// releases the whole chain (iteratively: a recursive release of a chain
// this deep would overflow a stack).
TEST(UnixHostileCycleTest, LongChainReleasedFromItsHead) {
  const int depth = InflightBudget(2000) / 2;
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    LeakCheck leaks;
    Pipe pipe;
    SocketPair head(type);
    ASSERT_TRUE(head.ok());
    leaks.Note(head.a.get());
    leaks.Note(head.b.get());
    // A new pair goes into head's b (sent over head's a), the next one
    // into that pair's b, and so on; each pair stays open only until the
    // next link is sent.
    int prev_a = head.a.get();
    FileDescriptor prev_holder_a, prev_holder_b;
    for (int i = 0; i < depth; ++i) {
      SocketPair next(type);
      ASSERT_TRUE(next.ok());
      leaks.Note(next.a.get());
      leaks.Note(next.b.get());
      std::vector<int> fds = {next.a.get(), next.b.get()};
      if (i == depth - 1) fds.push_back(pipe.w.get());
      ASSERT_THAT(SendFds(prev_a, fds), SyscallSucceedsWithValue(1))
          << type << " depth " << i;
      // Keep `next` open only as the sender for the next link.
      prev_holder_a = std::move(next.a);
      prev_holder_b = std::move(next.b);
      prev_a = prev_holder_a.get();
    }
    pipe.w.reset();
    prev_holder_a.reset();
    prev_holder_b.reset();
    // Everything is reachable from head: nothing may be collected.
    EXPECT_TRUE(StillOpen(pipe.r.get())) << type;
    head.a.reset();
    head.b.reset();
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// A listener whose pending connection (an embryo not yet accepted) holds
// the listener itself and the pipe end: the listener's only reference is
// in the queue of a socket that only the listener's queue holds.
TEST(UnixHostileCycleTest, ListenerHeldByItsEmbryo) {
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    LeakCheck leaks;
    Pipe pipe;
    const std::string name = UniqueName("embryo");
    UnixAddr addr = UnixAddr::Abstract(name);
    leaks.NoteName("@" + name);
    {
      FileDescriptor l = Listener(type, addr, 4);
      ASSERT_TRUE(l.valid());
      leaks.Note(l.get());
      FileDescriptor c = ConnectTo(type, addr);
      ASSERT_TRUE(c.valid()) << strerror(errno);
      leaks.Note(c.get());
      // c's sends go to the embryo's queue.
      ASSERT_THAT(SendFds(c.get(), {l.get(), pipe.w.get()}),
                  SyscallSucceedsWithValue(1));
      // And c itself into the embryo too (a second edge to the cycle).
      ASSERT_THAT(SendFds(c.get(), {c.get()}), SyscallSucceedsWithValue(1));
      pipe.w.reset();
    }
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// The same, with several embryos, one of them holding an accepted peer.
TEST(UnixHostileCycleTest, ListenerWithSeveralEmbryosInFlight) {
  LeakCheck leaks;
  Pipe pipe;
  const std::string name = UniqueName("embryos");
  UnixAddr addr = UnixAddr::Abstract(name);
  leaks.NoteName("@" + name);
  {
    FileDescriptor l = Listener(SOCK_STREAM, addr, 8);
    ASSERT_TRUE(l.valid());
    leaks.Note(l.get());
    FileDescriptor first = ConnectTo(SOCK_STREAM, addr);
    ASSERT_TRUE(first.valid());
    FileDescriptor accepted(accept(l.get(), nullptr, nullptr));
    ASSERT_TRUE(accepted.valid()) << strerror(errno);
    leaks.Note(first.get());
    leaks.Note(accepted.get());
    std::vector<FileDescriptor> clients;
    for (int i = 0; i < 4; ++i) {
      clients.push_back(ConnectTo(SOCK_STREAM, addr));
      ASSERT_TRUE(clients.back().valid());
      leaks.Note(clients.back().get());
      std::vector<int> fds = {l.get(), clients.back().get(), accepted.get()};
      if (i == 2) fds.push_back(pipe.w.get());
      ASSERT_THAT(SendFds(clients.back().get(), fds),
                  SyscallSucceedsWithValue(1));
    }
    // The accepted socket's peer `first` goes into the accepted one.
    ASSERT_THAT(SendFds(first.get(), {first.get()}),
                SyscallSucceedsWithValue(1));
    pipe.w.reset();
  }
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

// Epoll descriptors watching the sockets travel in the cycle: an epoll
// file holds no reference to what it watches, so it is dropped with the
// queue that holds it.
TEST(UnixHostileCycleTest, EpollOfTheSocketsInTheCycle) {
  for (int type : kTypes) {
    LeakCheck leaks;
    Pipe pipe;
    {
      SocketPair p(type);
      ASSERT_TRUE(p.ok());
      leaks.Note(p.a.get());
      leaks.Note(p.b.get());
      FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
      ASSERT_TRUE(ep.valid());
      FileDescriptor ep2(epoll_create1(EPOLL_CLOEXEC));
      ASSERT_TRUE(ep2.valid());
      epoll_event ev = {};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
      ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.a.get(), &ev),
                  SyscallSucceeds());
      ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.b.get(), &ev),
                  SyscallSucceeds());
      // An epoll watching an epoll, and the pipe's read end too.
      ASSERT_THAT(epoll_ctl(ep2.get(), EPOLL_CTL_ADD, ep.get(), &ev),
                  SyscallSucceeds());
      ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, pipe.r.get(), &ev),
                  SyscallSucceeds());
      ASSERT_THAT(SendFds(p.a.get(), {ep.get(), pipe.w.get(), p.a.get()}),
                  SyscallSucceedsWithValue(1));
      ASSERT_THAT(SendFds(p.b.get(), {ep2.get(), p.b.get()}),
                  SyscallSucceedsWithValue(1));
      pipe.w.reset();
      // Events still arrive while the cycle is alive.
      epoll_event out[4];
      EXPECT_THAT(epoll_wait(ep2.get(), out, 4, 0), SyscallSucceeds());
    }
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// Copies installed by MSG_PEEK are closed again; the cycle still goes.
TEST(UnixHostileCycleTest, PeekedCopiesThenCycleClosed) {
  LeakCheck leaks;
  Pipe pipe;
  {
    SocketPair p(SOCK_DGRAM);
    ASSERT_TRUE(p.ok());
    leaks.Note(p.a.get());
    leaks.Note(p.b.get());
    ASSERT_THAT(SendFds(p.a.get(), {p.a.get(), p.b.get(), pipe.w.get()}),
                SyscallSucceedsWithValue(1));
    ASSERT_THAT(SendFds(p.b.get(), {p.a.get(), p.b.get()}),
                SyscallSucceedsWithValue(1));
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(RecvAndCloseFds(p.b.get(), MSG_PEEK | MSG_DONTWAIT), 3);
      EXPECT_EQ(RecvAndCloseFds(p.a.get(), MSG_PEEK | MSG_DONTWAIT), 2);
    }
    pipe.w.reset();
  }
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

// A message with descriptors that a receiver takes out while the cycle is
// being closed by others: two threads, each making and dropping small
// cycles, with peeks and receives in between. Nothing may be lost or kept.
TEST(UnixHostileCycleTest, ManyCyclesFromTwoThreads) {
  LeakCheck leaks;
  Pipe pipe;
  constexpr int kRounds = 300;
  std::atomic<int> failures{0};
  auto worker = [&](int seed) {
    for (int i = 0; i < kRounds; ++i) {
      int fds[2];
      const int type = kTypes[(i + seed) % 3];
      if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0) {
        ++failures;
        return;
      }
      if (SendFds(fds[0], {fds[0], fds[1], pipe.w.get()}) != 1 ||
          SendFds(fds[1], {fds[1]}) != 1) {
        ++failures;
      }
      if (i % 3 == 0) RecvAndCloseFds(fds[1], MSG_PEEK | MSG_DONTWAIT);
      if (i % 5 == 0) RecvAndCloseFds(fds[0], MSG_DONTWAIT);
      close(fds[0]);
      close(fds[1]);
    }
  };
  std::thread t1(worker, 0), t2(worker, 1);
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0);
  pipe.w.reset();
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

// Without CAP_SYS_RESOURCE and CAP_SYS_ADMIN a user may keep at most
// RLIMIT_NOFILE descriptors in flight (too_many_unix_fds: a send is refused
// with ETOOMANYREFS once more than that are in flight); taking them out
// makes room again, and what was refused is not left in flight. The count
// is per user across the system, so the child becomes a user of its own
// (which also drops its capabilities).
TEST(UnixHostileCycleTest, InflightLimitIsRlimitNofile) {
  Pipe pipe;
  const uid_t uid = 40000 + getpid() % 20000;
  const int status = InForkedChild([&] {
    rlimit rl = {64, 64};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(10);
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(20);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) _exit(12);
    const std::vector<int> eight(8, pipe.w.get());
    int sent = 0;
    while (sent < 100 && SendFds(sv[0], eight, MSG_DONTWAIT) == 1) ++sent;
    if (errno != ETOOMANYREFS) _exit(13);
    // 64 in flight is still allowed: 9 messages of 8 go.
    if (sent != 9) _exit(30 + std::min(sent, 50));
    if (SendFds(sv[0], {pipe.w.get()}, MSG_DONTWAIT) != -1 ||
        errno != ETOOMANYREFS) {
      _exit(15);
    }
    // Without descriptors a message still goes.
    if (send(sv[0], "p", 1, MSG_DONTWAIT) != 1) _exit(16);
    for (int i = 0; i < 2; ++i) {
      if (RecvAndCloseFds(sv[1], MSG_DONTWAIT) != 8) _exit(17);
    }
    // 56 in flight: one more message of 8, then refused again.
    if (SendFds(sv[0], eight, MSG_DONTWAIT) != 1) _exit(18);
    if (SendFds(sv[0], eight, MSG_DONTWAIT) != 1) _exit(19);
    if (SendFds(sv[0], eight, MSG_DONTWAIT) != -1 || errno != ETOOMANYREFS) {
      _exit(21);
    }
    close(sv[0]);
    close(sv[1]);
    _exit(0);
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 20) {
    GTEST_SKIP() << "cannot become uid " << uid << " (user namespace map?)";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
  pipe.w.reset();
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

// ---- 2. Datagram floods. ----

// Non-blocking sends until EAGAIN, to a connected pair and to a bound
// receiver from many senders; everything queued is received, then EAGAIN.
TEST(UnixHostileFloodTest, NonBlockingUntilEagain) {
  LeakCheck leaks;
  {
    SocketPair p(SOCK_DGRAM);
    ASSERT_TRUE(p.ok());
    int sent = 0;
    ssize_t r;
    while (sent < 100000 &&
           (r = send(p.a.get(), "flood", 5, MSG_DONTWAIT)) == 5) {
      ++sent;
    }
    ASSERT_LT(sent, 100000) << "a datagram queue without a bound";
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_THAT(send(p.a.get(), "x", 1, MSG_DONTWAIT),
                SyscallFailsWithErrno(EAGAIN));
    // POLLOUT is off while it is full.
    EXPECT_EQ(PollNow(p.a.get(), POLLOUT) & POLLOUT, 0);
    char buf[16];
    int got = 0;
    while (recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT) == 5) ++got;
    EXPECT_EQ(got, sent);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_THAT(send(p.a.get(), "x", 1, MSG_DONTWAIT),
                SyscallSucceedsWithValue(1));
  }
  const std::string name = UniqueName("flood");
  UnixAddr addr = UnixAddr::Abstract(name);
  leaks.NoteName("@" + name);
  FileDescriptor rx = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(rx.valid());
  ASSERT_THAT(bind(rx.get(), addr.sa(), addr.len), SyscallSucceeds());
  std::vector<FileDescriptor> senders;
  int sent = 0;
  for (int s = 0; s < 50; ++s) {
    senders.push_back(UnixSocket(SOCK_DGRAM | SOCK_NONBLOCK));
    ASSERT_TRUE(senders.back().valid());
    leaks.Note(senders.back().get());
    for (int i = 0; i < 1000; ++i) {
      if (sendto(senders.back().get(), "d", 1, 0, addr.sa(), addr.len) != 1) {
        EXPECT_EQ(errno, EAGAIN);
        break;
      }
      ++sent;
    }
  }
  char c;
  int got = 0;
  while (recv(rx.get(), &c, 1, MSG_DONTWAIT) == 1) ++got;
  EXPECT_EQ(got, sent);
  EXPECT_EQ(errno, EAGAIN);
}

// The flood carries descriptors; the receiver is closed unread: all of
// them are released.
TEST(UnixHostileFloodTest, FloodWithDescriptorsClosedUnread) {
  LeakCheck leaks;
  Pipe pipe;
  {
    SocketPair p(SOCK_DGRAM);
    ASSERT_TRUE(p.ok());
    leaks.Note(p.b.get());
    int sent = 0;
    while (sent < 10000 &&
           SendFds(p.a.get(), {pipe.w.get(), p.a.get()}, MSG_DONTWAIT) == 1) {
      ++sent;
    }
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_GT(sent, 0);
    pipe.w.reset();
    p.b.reset();  // drops every queued message and what it carries
    EXPECT_TRUE(HupWithin(pipe.r.get()));
    leaks.Note(p.a.get());
  }
}

// Senders blocked on a full receiver are killed; the receiver keeps
// working and nothing the killed ones were sending stays around.
TEST(UnixHostileFloodTest, BlockedSendersKilled) {
  LeakCheck leaks;
  Pipe pipe;
  const std::string name = UniqueName("killed");
  UnixAddr addr = UnixAddr::Abstract(name);
  leaks.NoteName("@" + name);
  FileDescriptor rx = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(rx.valid());
  ASSERT_THAT(bind(rx.get(), addr.sa(), addr.len), SyscallSucceeds());
  FileDescriptor filler = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(filler.valid());
  int queued = 0;
  while (queued < 100000 &&
         sendto(filler.get(), "f", 1, MSG_DONTWAIT, addr.sa(), addr.len) == 1) {
    ++queued;
  }
  ASSERT_EQ(errno, EAGAIN);
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int s = socket(AF_UNIX, SOCK_DGRAM, 0);
      // Blocks: the receiver is full. Carries the pipe end.
      char control[CMSG_SPACE(sizeof(int))] = {};
      int fd = pipe.w.get();
      iovec iov = {const_cast<char*>("k"), 1};
      msghdr m = {};
      m.msg_name = const_cast<sockaddr*>(addr.sa());
      m.msg_namelen = addr.len;
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(c), &fd, sizeof(fd));
      close(pipe.r.get());
      sendmsg(s, &m, 0);
      _exit(3);  // only if the send returned
    }
    kids.push_back(pid);
  }
  pipe.w.reset();
  // Each child is asleep in its send (bounded wait).
  for (pid_t pid : kids) {
    for (int waited = 0; waited < kWaitMs && ProcStatState(pid) != 'S';
         waited += 10) {
      usleep(10000);
    }
    EXPECT_EQ(ProcStatState(pid), 'S') << pid;
  }
  EXPECT_TRUE(StillOpen(pipe.r.get()));
  for (pid_t pid : kids) kill(pid, SIGKILL);
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
    EXPECT_THAT(status, KilledBySignal(SIGKILL));
  }
  // The killed senders' copies of the pipe end are gone with them.
  EXPECT_TRUE(HupWithin(pipe.r.get()));
  char c;
  int got = 0;
  while (recv(rx.get(), &c, 1, MSG_DONTWAIT) == 1) {
    EXPECT_EQ(c, 'f');
    ++got;
  }
  EXPECT_EQ(got, queued);
  ASSERT_THAT(sendto(filler.get(), "z", 1, MSG_DONTWAIT, addr.sa(), addr.len),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(rx.get(), &c, 1, MSG_DONTWAIT), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'z');
}

// ---- 3. Connect storms on backlog 1. ----

// Accepts everything pending (the listener made non-blocking for it); the
// count.
int AcceptAll(int l, LeakCheck* leaks) {
  const int fl = fcntl(l, F_GETFL);
  fcntl(l, F_SETFL, fl | O_NONBLOCK);
  int n = 0;
  for (;;) {
    int fd = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) break;
    if (leaks != nullptr) leaks->Note(fd);
    close(fd);
    ++n;
  }
  fcntl(l, F_SETFL, fl);
  return n;
}

// 10,000 non-blocking connects: Linux queues backlog + 1 connections, then
// EAGAIN; accepting makes room again. Every connect is either accepted or
// EAGAIN; nothing else.
TEST(UnixHostileConnectTest, TenThousandConnectsToBacklogOne) {
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    LeakCheck leaks;
    const std::string name = UniqueName("storm");
    UnixAddr addr = UnixAddr::Abstract(name);
    leaks.NoteName("@" + name);
    FileDescriptor l = Listener(type, addr, 1);
    ASSERT_TRUE(l.valid());
    leaks.Note(l.get());
    int connected = 0, eagain = 0, other = 0, accepted = 0;
    int max_pending = 0, pending = 0;
    for (int i = 0; i < 10000; ++i) {
      FileDescriptor c(socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      ASSERT_TRUE(c.valid());
      if (connect(c.get(), addr.sa(), addr.len) == 0) {
        ++connected;
        max_pending = std::max(max_pending, ++pending);
        // The connector closes at once (its embryo stays queued), some
        // after writing to it.
        if (i % 7 == 0) {
          ASSERT_THAT(send(c.get(), "hi", 2, MSG_DONTWAIT),
                      SyscallSucceedsWithValue(2));
        }
        continue;
      }
      if (errno == EAGAIN) {
        ++eagain;
        if (i % 3 == 0) {
          int n = AcceptAll(l.get(), nullptr);
          accepted += n;
          pending -= n;
        }
      } else {
        ++other;
        ADD_FAILURE() << "connect " << i << ": " << strerror(errno);
        break;
      }
    }
    accepted += AcceptAll(l.get(), nullptr);
    EXPECT_EQ(other, 0);
    EXPECT_GT(eagain, 0) << "backlog 1 never filled";
    EXPECT_EQ(max_pending, 2) << "Linux queues backlog + 1";
    EXPECT_EQ(accepted, connected);
    // The listener still works.
    FileDescriptor c = ConnectTo(type, addr);
    ASSERT_TRUE(c.valid()) << strerror(errno);
    FileDescriptor s(accept(l.get(), nullptr, nullptr));
    ASSERT_TRUE(s.valid());
    ASSERT_THAT(send(c.get(), "ok", 2, 0), SyscallSucceedsWithValue(2));
    char buf[2];
    EXPECT_THAT(recv(s.get(), buf, 2, 0), SyscallSucceedsWithValue(2));
  }
}

void NoopHandler(int) {}

struct ScopedSigusr1 {
  ScopedSigusr1() {
    struct sigaction sa = {};
    sa.sa_handler = NoopHandler;  // no SA_RESTART: EINTR
    sigaction(SIGUSR1, &sa, &old);
  }
  ~ScopedSigusr1() { sigaction(SIGUSR1, &old, nullptr); }
  struct sigaction old = {};
};

// Blocking connects from threads wait on the full backlog; a signal
// interrupts each (EINTR without SA_RESTART); the listener stays usable.
TEST(UnixHostileConnectTest, BlockingConnectsInterrupted) {
  LeakCheck leaks;
  ScopedSigusr1 sig;
  const std::string name = UniqueName("intr");
  UnixAddr addr = UnixAddr::Abstract(name);
  leaks.NoteName("@" + name);
  FileDescriptor l = Listener(SOCK_STREAM, addr, 1);
  ASSERT_TRUE(l.valid());
  std::vector<FileDescriptor> fill;
  for (;;) {
    FileDescriptor c(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
    if (connect(c.get(), addr.sa(), addr.len) != 0) {
      ASSERT_EQ(errno, EAGAIN);
      break;
    }
    fill.push_back(std::move(c));
    ASSERT_LT(fill.size(), 100u);
  }
  constexpr int kThreads = 4;
  std::atomic<int> done{0};
  std::vector<int> errs(kThreads, 0);
  std::vector<pthread_t> ids(kThreads);
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ids[i] = pthread_self();
      int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      ++started;
      int r = connect(s, addr.sa(), addr.len);
      errs[i] = r == 0 ? 0 : errno;
      close(s);
      ++done;
    });
  }
  while (started.load() < kThreads) usleep(1000);
  // Signal until every thread came back (one signalled before it blocked
  // would block after the handler ran).
  for (int waited = 0; done.load() < kThreads && waited < kWaitMs;
       waited += 20) {
    usleep(20000);
    for (int i = 0; i < kThreads; ++i) pthread_kill(ids[i], SIGUSR1);
    if (done.load() == kThreads) break;
  }
  ASSERT_EQ(done.load(), kThreads) << "blocked connects were not interrupted";
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(errs[i], EINTR) << i;
  EXPECT_EQ(AcceptAll(l.get(), &leaks), static_cast<int>(fill.size()));
  FileDescriptor c = ConnectTo(SOCK_STREAM, addr);
  EXPECT_TRUE(c.valid()) << strerror(errno);
}

// Blocked connectors are woken by the listener's close and refused.
TEST(UnixHostileConnectTest, BlockedConnectsRefusedWhenListenerCloses) {
  LeakCheck leaks;
  const std::string name = UniqueName("refuse");
  UnixAddr addr = UnixAddr::Abstract(name);
  leaks.NoteName("@" + name);
  FileDescriptor l = Listener(SOCK_STREAM, addr, 1);
  ASSERT_TRUE(l.valid());
  std::vector<FileDescriptor> fill;
  for (;;) {
    FileDescriptor c(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
    if (connect(c.get(), addr.sa(), addr.len) != 0) break;
    fill.push_back(std::move(c));
    ASSERT_LT(fill.size(), 100u);
  }
  constexpr int kThreads = 4;
  std::vector<int> errs(kThreads, 0);
  std::vector<pid_t> tids(kThreads, 0);
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      tids[i] = static_cast<pid_t>(syscall(SYS_gettid));
      int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      int r = connect(s, addr.sa(), addr.len);
      errs[i] = r == 0 ? 0 : errno;
      close(s);
      ++done;
    });
  }
  // All asleep in connect (bounded), then the listener goes.
  for (int i = 0; i < kThreads; ++i) {
    std::string stat;
    for (int waited = 0; waited < kWaitMs; waited += 10) {
      pid_t tid = tids[i];
      if (tid != 0) {
        stat =
            ReadFileOrEmpty("/proc/self/task/" + std::to_string(tid) + "/stat");
        size_t p = stat.rfind(')');
        if (p != std::string::npos && p + 2 < stat.size() &&
            stat[p + 2] == 'S') {
          break;
        }
      }
      usleep(10000);
    }
  }
  EXPECT_EQ(done.load(), 0);
  l.reset();
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(errs[i], ECONNREFUSED) << i;
  // The queued connections were reset with the listener.
  for (auto& c : fill) {
    char ch;
    EXPECT_THAT(recv(c.get(), &ch, 1, MSG_DONTWAIT),
                SyscallFailsWithErrno(ECONNRESET));
    leaks.Note(c.get());
  }
}

// ---- 4. Garbage lengths. ----

// A page that faults on any access, for the whole test binary.
char* NoAccess() {
  static char* page = [] {
    void* p = mmap(nullptr, PageSize(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return static_cast<char*>(p == MAP_FAILED ? nullptr : p);
  }();
  return page;
}

// A readable-writable buffer whose last `tail` bytes end right before a
// PROT_NONE page (for arrays that run off their mapping).
struct EdgeBuffer {
  EdgeBuffer() {
    size_t ps = PageSize();
    void* p = mmap(nullptr, 2 * ps, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = static_cast<char*>(p);
    mprotect(base + ps, ps, PROT_NONE);
    end = base + ps;
  }
  ~EdgeBuffer() { munmap(base, 2 * PageSize()); }
  char* base;
  char* end;  // the first faulting byte
};

ssize_t SendMsg(int fd, void* name, socklen_t namelen, iovec* iov,
                size_t iovlen, void* control, size_t controllen,
                int flags = MSG_DONTWAIT) {
  msghdr m = {};
  m.msg_name = name;
  m.msg_namelen = namelen;
  m.msg_iov = iov;
  m.msg_iovlen = iovlen;
  m.msg_control = control;
  m.msg_controllen = controllen;
  return sendmsg(fd, &m, flags);
}

TEST(UnixHostileMsghdrTest, IovecCountsAndPointers) {
  LeakCheck leaks;
  for (int type : kTypes) {
    SocketPair p(type);
    ASSERT_TRUE(p.ok());
    char d[4] = {'a', 'b', 'c', 'd'};
    iovec iov = {d, 4};
    // More than UIO_MAXIOV iovecs: EMSGSIZE before reading them.
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &iov, 1025, nullptr, 0),
                SyscallFailsWithErrno(EMSGSIZE));
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &iov, SIZE_MAX, nullptr, 0),
                SyscallFailsWithErrno(EMSGSIZE));
    EXPECT_THAT(
        SendMsg(p.a.get(), nullptr, 0, nullptr, SIZE_MAX / 2, nullptr, 0),
        SyscallFailsWithErrno(EMSGSIZE));
    // The iovec array itself unmapped, or NULL with a count.
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, nullptr, 1, nullptr, 0),
                SyscallFailsWithErrno(EFAULT));
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0,
                        reinterpret_cast<iovec*>(NoAccess()), 2, nullptr, 0),
                SyscallFailsWithErrno(EFAULT));
    // An array that runs off its mapping.
    {
      EdgeBuffer e;
      iovec* last = reinterpret_cast<iovec*>(e.end) - 1;
      *last = {d, 1};
      EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, last, 2, nullptr, 0),
                  SyscallFailsWithErrno(EFAULT));
    }
    // iov_len with the sign bit: EINVAL.
    iovec neg[2] = {{d, 1}, {d, static_cast<size_t>(SSIZE_MAX) + 1}};
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, neg, 2, nullptr, 0),
                SyscallFailsWithErrno(EINVAL));
    // iov_base NULL with a length, and an unmapped iovec between good ones.
    iovec null_base = {nullptr, 4};
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &null_base, 1, nullptr, 0),
                SyscallFailsWithErrno(EFAULT));
    iovec middle[3] = {{d, 2}, {NoAccess(), 2}, {d + 2, 2}};
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, middle, 3, nullptr, 0),
                SyscallFailsWithErrno(EFAULT));
    // A kernel address.
    iovec kern = {reinterpret_cast<void*>(0xffffffff81000000ul), 4};
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &kern, 1, nullptr, 0),
                SyscallFailsWithErrno(EFAULT));
    // Zero-length iovecs with garbage bases are fine.
    iovec zeros[3] = {{NoAccess(), 0}, {nullptr, 0}, {d, 1}};
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, zeros, 3, nullptr, 0),
                SyscallSucceedsWithValue(1));
    // None of the failures queued anything.
    char buf[8];
    EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT),
                SyscallSucceedsWithValue(1))
        << type;
    EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT),
                SyscallFailsWithErrno(EAGAIN))
        << type;
  }
}

// A datagram bigger than the send buffer is EMSGSIZE before its bytes are
// read, even when they could not be (sendto's length is cut to
// MAX_RW_COUNT); an iovec length with the sign bit is EINVAL, alone too.
TEST(UnixHostileMsghdrTest, HugeIovecOnDatagramIsEmsgsize) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  std::vector<char> d(4);
  iovec huge[2] = {{d.data(), 4}, {d.data(), size_t{1} << 30}};
  EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, huge, 2, nullptr, 0),
              SyscallFailsWithErrno(EMSGSIZE));
  iovec neg = {d.data(), static_cast<size_t>(SSIZE_MAX) + 1};
  EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &neg, 1, nullptr, 0),
              SyscallFailsWithErrno(EINVAL));
  neg.iov_len = SIZE_MAX;
  EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &neg, 1, nullptr, 0),
              SyscallFailsWithErrno(EINVAL));
  iovec big = {d.data(), static_cast<size_t>(SSIZE_MAX)};
  EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &big, 1, nullptr, 0),
              SyscallFailsWithErrno(EMSGSIZE));
  EXPECT_THAT(sendto(p.a.get(), d.data(), SIZE_MAX, MSG_DONTWAIT, nullptr, 0),
              SyscallFailsWithErrno(EMSGSIZE));
}

// Receiving into bad iovecs: a stream keeps its bytes; a datagram is
// dropped (with what it carries).
TEST(UnixHostileMsghdrTest, ReceiveIntoBadIovecs) {
  LeakCheck leaks;
  {
    SocketPair p(SOCK_STREAM);
    ASSERT_TRUE(p.ok());
    ASSERT_THAT(send(p.a.get(), "abcdef", 6, 0), SyscallSucceedsWithValue(6));
    char buf[8] = {};
    iovec middle[3] = {{buf, 2}, {NoAccess(), 2}, {buf + 2, 2}};
    msghdr m = {};
    m.msg_iov = middle;
    m.msg_iovlen = 3;
    EXPECT_THAT(recvmsg(p.b.get(), &m, MSG_DONTWAIT),
                SyscallFailsWithErrno(EFAULT));
    EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT),
                SyscallSucceedsWithValue(6));
    EXPECT_EQ(std::string(buf, 6), "abcdef");
    EXPECT_THAT(recv(p.b.get(), NoAccess(), 4, MSG_DONTWAIT),
                SyscallFailsWithErrno(EAGAIN));
  }
  for (int type : {SOCK_DGRAM, SOCK_SEQPACKET}) {
    Pipe pipe;
    SocketPair p(type);
    ASSERT_TRUE(p.ok());
    ASSERT_THAT(SendFds(p.a.get(), {pipe.w.get()}, 0, "abcdef", 6),
                SyscallSucceedsWithValue(6));
    pipe.w.reset();
    char buf[8];
    alignas(cmsghdr) char control[64];
    iovec middle[3] = {{buf, 2}, {NoAccess(), 2}, {buf + 2, 2}};
    msghdr m = {};
    m.msg_iov = middle;
    m.msg_iovlen = 3;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    const int before = FdCount();
    EXPECT_THAT(recvmsg(p.b.get(), &m, MSG_DONTWAIT),
                SyscallFailsWithErrno(EFAULT))
        << type;
    EXPECT_EQ(FdCount(), before) << type << ": a descriptor was installed";
    EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT),
                SyscallFailsWithErrno(EAGAIN))
        << type;
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// Descriptors received into an unmapped control buffer: none is installed,
// MSG_CTRUNC says so, the data still arrives, and the rest is released.
TEST(UnixHostileMsghdrTest, RightsIntoUnmappedControl) {
  LeakCheck leaks;
  for (int type : kTypes) {
    Pipe pipe;
    SocketPair p(type);
    ASSERT_TRUE(p.ok());
    ASSERT_THAT(SendFds(p.a.get(), {pipe.w.get(), pipe.w.get()}),
                SyscallSucceedsWithValue(1));
    pipe.w.reset();
    char c;
    iovec iov = {&c, 1};
    msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = NoAccess();
    m.msg_controllen = 64;
    const int before = FdCount();
    EXPECT_THAT(recvmsg(p.b.get(), &m, MSG_DONTWAIT),
                SyscallSucceedsWithValue(1))
        << type;
    EXPECT_EQ(FdCount(), before) << type;
    EXPECT_TRUE(m.msg_flags & MSG_CTRUNC) << type << " " << m.msg_flags;
    EXPECT_EQ(m.msg_controllen, 0u) << type;
    EXPECT_TRUE(HupWithin(pipe.r.get())) << type;
  }
}

// msg_controllen and cmsg_len: huge, odd, small, zero, short, overflowing.
TEST(UnixHostileMsghdrTest, ControlLengths) {
  LeakCheck leaks;
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  char d = 'm';
  iovec iov = {&d, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int)) + 64] = {};
  cmsghdr* c = reinterpret_cast<cmsghdr*>(control);
  auto rights = [&](size_t cmsg_len, int nfds) {
    memset(control, 0, sizeof(control));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = cmsg_len;
    for (int i = 0; i < nfds; ++i) {
      int fd = pipe.w.get();
      memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof(fd));
    }
  };
  auto send_ctl = [&](size_t controllen) {
    return SendMsg(p.a.get(), nullptr, 0, &iov, 1, control, controllen);
  };
  int queued = 0;
  // msg_controllen over INT_MAX, or over optmem_max: ENOBUFS.
  rights(CMSG_LEN(sizeof(int)), 1);
  EXPECT_THAT(send_ctl(size_t{INT_MAX} + 1), SyscallFailsWithErrno(ENOBUFS));
  EXPECT_THAT(send_ctl(SIZE_MAX), SyscallFailsWithErrno(ENOBUFS));
  EXPECT_THAT(send_ctl(size_t{1} << 20), SyscallFailsWithErrno(ENOBUFS));
  // Smaller than a cmsghdr: no control message at all (sent).
  for (size_t len : {size_t{1}, size_t{7}, sizeof(cmsghdr) - 1}) {
    EXPECT_THAT(send_ctl(len), SyscallSucceedsWithValue(1)) << len;
    ++queued;
  }
  // cmsg_len 0, short of a header, past msg_controllen, huge: EINVAL.
  for (size_t len : {size_t{0}, size_t{1}, sizeof(cmsghdr) - 1,
                     CMSG_LEN(sizeof(int)) + 1, size_t{1} << 40, SIZE_MAX}) {
    rights(len, 1);
    EXPECT_THAT(send_ctl(CMSG_LEN(sizeof(int))), SyscallFailsWithErrno(EINVAL))
        << len;
  }
  // SCM_RIGHTS with no whole descriptor: nothing passed, but sent.
  for (size_t len : {CMSG_LEN(0), CMSG_LEN(3)}) {
    rights(len, 0);
    EXPECT_THAT(send_ctl(CMSG_SPACE(4)), SyscallSucceedsWithValue(1)) << len;
    ++queued;
  }
  // An odd msg_controllen after a good cmsg: the tail is ignored.
  rights(CMSG_LEN(sizeof(int)), 1);
  EXPECT_THAT(send_ctl(CMSG_SPACE(sizeof(int)) + 3),
              SyscallSucceedsWithValue(1));
  ++queued;
  // A good SCM_RIGHTS, then a broken second header: EINVAL, and the first
  // one's descriptor is not left in flight.
  rights(CMSG_LEN(sizeof(int)), 1);
  cmsghdr* second =
      reinterpret_cast<cmsghdr*>(control + CMSG_SPACE(sizeof(int)));
  second->cmsg_level = SOL_SOCKET;
  second->cmsg_type = SCM_RIGHTS;
  second->cmsg_len = 1000;
  EXPECT_THAT(send_ctl(CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(int))),
              SyscallFailsWithErrno(EINVAL));
  // Two good SCM_RIGHTS headers: one message.
  second->cmsg_len = CMSG_LEN(sizeof(int));
  {
    int fd = pipe.w.get();
    memcpy(CMSG_DATA(second), &fd, sizeof(fd));
  }
  EXPECT_THAT(send_ctl(CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(int))),
              SyscallSucceedsWithValue(1));
  ++queued;
  // An unknown level is ignored by AF_UNIX; SOL_SOCKET's unknown type is
  // EINVAL.
  rights(CMSG_LEN(sizeof(int)), 1);
  c->cmsg_level = 0x1234;
  EXPECT_THAT(send_ctl(CMSG_SPACE(sizeof(int))), SyscallSucceedsWithValue(1));
  ++queued;
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = 0x1234;
  EXPECT_THAT(send_ctl(CMSG_SPACE(sizeof(int))), SyscallFailsWithErrno(EINVAL));
  // The control pointer unmapped, or running off its mapping.
  EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &iov, 1, NoAccess(), 64),
              SyscallFailsWithErrno(EFAULT));
  {
    EdgeBuffer e;
    memcpy(e.end - CMSG_LEN(sizeof(int)), control, CMSG_LEN(sizeof(int)));
    EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &iov, 1,
                        e.end - CMSG_LEN(sizeof(int)), CMSG_SPACE(8)),
                SyscallFailsWithErrno(EFAULT));
  }
  // Control length without a pointer.
  EXPECT_THAT(SendMsg(p.a.get(), nullptr, 0, &iov, 1, nullptr, 64),
              SyscallFailsWithErrno(EFAULT));
  // Exactly what succeeded is queued; the descriptors go with the reads.
  int got = 0;
  while (RecvAndCloseFds(p.b.get(), MSG_DONTWAIT) >= 0) ++got;
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(got, queued);
  pipe.w.reset();
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

// Receive-side control lengths: small, odd and huge buffers.
TEST(UnixHostileMsghdrTest, ReceiveControlLengths) {
  LeakCheck leaks;
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  Pipe pipe;
  for (size_t controllen :
       {size_t{1}, sizeof(cmsghdr) - 1, sizeof(cmsghdr),
        CMSG_LEN(sizeof(int)) - 1, CMSG_LEN(sizeof(int)),
        CMSG_LEN(sizeof(int)) + 1, CMSG_SPACE(sizeof(int)) + 3,
        size_t{INT_MAX} + 1, SIZE_MAX}) {
    ASSERT_THAT(SendFds(p.a.get(), {pipe.w.get(), pipe.w.get()}),
                SyscallSucceedsWithValue(1));
    char c;
    iovec iov = {&c, 1};
    alignas(cmsghdr) char control[256];
    memset(control, 0xee, sizeof(control));
    msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = controllen;
    const int before = FdCount();
    // A claim larger than the buffer is fine while what is written fits
    // (two descriptors); Linux's int arithmetic makes SIZE_MAX room for
    // none (MSG_CTRUNC), which this allows too.
    EXPECT_THAT(recvmsg(p.b.get(), &m, MSG_DONTWAIT),
                SyscallSucceedsWithValue(1))
        << controllen;
    EXPECT_LE(m.msg_controllen, std::min(controllen, sizeof(control)))
        << controllen;
    int installed = 0;
    if (m.msg_controllen >= sizeof(cmsghdr)) {
      for (cmsghdr* h = CMSG_FIRSTHDR(&m); h != nullptr;
           h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_type != SCM_RIGHTS) continue;
        int k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (int i = 0; i < k; ++i) {
          int fd;
          memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
          close(fd);
          ++installed;
        }
      }
    }
    EXPECT_EQ(FdCount(), before) << controllen;
    if (installed < 2) {
      EXPECT_TRUE(m.msg_flags & MSG_CTRUNC) << controllen;
    }
  }
  pipe.w.reset();
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

// Addresses with bad lengths, on every call that takes one.
TEST(UnixHostileMsghdrTest, AddressLengths) {
  LeakCheck leaks;
  FileDescriptor s = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(s.valid());
  const std::string aname = UniqueName("addr"), taname = UniqueName("addrtx");
  leaks.NoteName("@" + aname);
  leaks.NoteName("@" + taname);
  UnixAddr a = UnixAddr::Abstract(aname);
  sockaddr_storage big = {};
  memcpy(&big, &a.addr, sizeof(a.addr));
  const sockaddr* sa = reinterpret_cast<const sockaddr*>(&big);
  for (int len :
       {-1, 0, 1, static_cast<int>(sizeof(sockaddr_un)) + 1,
        static_cast<int>(sizeof(sockaddr_storage)),
        static_cast<int>(sizeof(sockaddr_storage)) + 1, INT_MAX, INT_MIN}) {
    EXPECT_THAT(bind(s.get(), sa, len), SyscallFailsWithErrno(EINVAL)) << len;
    EXPECT_THAT(connect(s.get(), sa, len), SyscallFailsWithErrno(EINVAL))
        << len;
    if (len != 0) {
      EXPECT_THAT(sendto(s.get(), "x", 1, MSG_DONTWAIT, sa, len),
                  SyscallFailsWithErrno(EINVAL))
          << len;
    }
  }
  // Unmapped addresses.
  EXPECT_THAT(bind(s.get(), reinterpret_cast<sockaddr*>(NoAccess()), 16),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(connect(s.get(), nullptr, 16), SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(
      sendto(s.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(NoAccess()), 16),
      SyscallFailsWithErrno(EFAULT));
  // msg_namelen: negative is EINVAL; longer than sockaddr_storage is cut
  // to it (then too long for AF_UNIX: EINVAL); an unmapped name EFAULT.
  char d = 'x';
  iovec iov = {&d, 1};
  EXPECT_THAT(
      SendMsg(s.get(), &big, static_cast<socklen_t>(-1), &iov, 1, nullptr, 0),
      SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SendMsg(s.get(), &big, INT_MAX, &iov, 1, nullptr, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SendMsg(s.get(), NoAccess(), 16, &iov, 1, nullptr, 0),
              SyscallFailsWithErrno(EFAULT));
  // A name pointer with length 0 is no name at all.
  EXPECT_THAT(SendMsg(s.get(), NoAccess(), 0, &iov, 1, nullptr, 0),
              SyscallFailsWithErrno(ENOTCONN));
  // Names read back: a bad length pointer, a negative length.
  socklen_t len = sizeof(sockaddr_un);
  EXPECT_THAT(getsockname(s.get(), reinterpret_cast<sockaddr*>(&big),
                          reinterpret_cast<socklen_t*>(NoAccess())),
              SyscallFailsWithErrno(EFAULT));
  len = static_cast<socklen_t>(-1);
  EXPECT_THAT(getsockname(s.get(), reinterpret_cast<sockaddr*>(&big), &len),
              SyscallFailsWithErrno(EINVAL));
  // recvmsg: a negative msg_namelen is EINVAL before anything is taken;
  // an unmapped name is EFAULT after the datagram was taken.
  ASSERT_THAT(bind(s.get(), a.sa(), a.len), SyscallSucceeds());
  FileDescriptor tx = UnixSocket(SOCK_DGRAM);
  UnixAddr ta = UnixAddr::Abstract(taname);
  ASSERT_THAT(bind(tx.get(), ta.sa(), ta.len), SyscallSucceeds());
  ASSERT_THAT(sendto(tx.get(), "1", 1, 0, a.sa(), a.len),
              SyscallSucceedsWithValue(1));
  char buf[4];
  iovec riov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &riov;
  m.msg_iovlen = 1;
  m.msg_name = &big;
  m.msg_namelen = static_cast<socklen_t>(-5);
  EXPECT_THAT(recvmsg(s.get(), &m, MSG_DONTWAIT),
              SyscallFailsWithErrno(EINVAL));
  m.msg_name = NoAccess();
  m.msg_namelen = sizeof(sockaddr_un);
  EXPECT_THAT(recvmsg(s.get(), &m, MSG_DONTWAIT),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(recv(s.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  // recvfrom with a huge length pointer value.
  ASSERT_THAT(sendto(tx.get(), "2", 1, 0, a.sa(), a.len),
              SyscallSucceedsWithValue(1));
  len = INT_MAX;
  EXPECT_THAT(recvfrom(s.get(), buf, sizeof(buf), MSG_DONTWAIT,
                       reinterpret_cast<sockaddr*>(&big), &len),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(len, ta.len);
}

// struct mmsghdr as Linux lays it out.
TEST(UnixHostileMsghdrTest, MmsgCountsAndArrays) {
  LeakCheck leaks;
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  char d = 'q';
  iovec iov = {&d, 1};
  // vlen huge: cut to UIO_MAXIOV (1024) messages (empty ones: a stream
  // takes any number of them without filling its buffer).
  std::vector<mmsghdr> v(1100);
  for (auto& mm : v) {
    mm = {};
    mm.msg_len = 0xdead;
  }
  EXPECT_THAT(sendmmsg(p.a.get(), v.data(), UINT_MAX, MSG_DONTWAIT),
              SyscallSucceedsWithValue(1024));
  EXPECT_EQ(v[1023].msg_len, 0u);
  EXPECT_EQ(v[1024].msg_len, 0xdeadu);
  // An array that runs off its mapping: the messages before the fault are
  // sent and counted, the error is lost.
  {
    EdgeBuffer e;
    mmsghdr* two = reinterpret_cast<mmsghdr*>(e.end) - 2;
    for (int i = 0; i < 2; ++i) {
      two[i] = {};
      two[i].msg_hdr.msg_iov = &iov;
      two[i].msg_hdr.msg_iovlen = 1;
    }
    EXPECT_THAT(sendmmsg(p.a.get(), two, UINT_MAX, MSG_DONTWAIT),
                SyscallSucceedsWithValue(2));
    // The first one itself bad: its errno.
    EXPECT_THAT(
        sendmmsg(p.a.get(), reinterpret_cast<mmsghdr*>(e.end), 5, MSG_DONTWAIT),
        SyscallFailsWithErrno(EFAULT));
    // recvmmsg with a huge vlen takes the two bytes and stops at the
    // mapping's end.
    std::vector<char> bufs(2);
    iovec riov = {bufs.data(), 1};
    for (int i = 0; i < 2; ++i) {
      two[i] = {};
      two[i].msg_hdr.msg_iov = &riov;
      two[i].msg_hdr.msg_iovlen = 1;
    }
    EXPECT_THAT(recvmmsg(p.b.get(), two, UINT_MAX, MSG_DONTWAIT, nullptr),
                SyscallSucceedsWithValue(2));
    // The fault after the second is kept as the socket's error.
    int err = 0;
    socklen_t elen = sizeof(err);
    ASSERT_THAT(getsockopt(p.b.get(), SOL_SOCKET, SO_ERROR, &err, &elen),
                SyscallSucceeds());
    EXPECT_EQ(err, EFAULT);
  }
  // A bad timeout, a bad array.
  timespec bad = {0, 1000000000};
  EXPECT_THAT(recvmmsg(p.b.get(), v.data(), 1, MSG_DONTWAIT, &bad),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(recvmmsg(p.b.get(), v.data(), 1, MSG_DONTWAIT,
                       reinterpret_cast<timespec*>(NoAccess())),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(recvmmsg(p.b.get(), reinterpret_cast<mmsghdr*>(NoAccess()), 4,
                       MSG_DONTWAIT, nullptr),
              SyscallFailsWithErrno(EFAULT));
  // vlen 0 is 0 either way.
  EXPECT_THAT(sendmmsg(p.a.get(), nullptr, 0, 0), SyscallSucceedsWithValue(0));
  // recvmmsg with a huge vlen: all of 1000 bytes, in messages of up to 64
  // bytes each, then EAGAIN ends it.
  std::vector<char> kb(1000, 'k');
  ASSERT_THAT(send(p.a.get(), kb.data(), kb.size(), 0),
              SyscallSucceedsWithValue(1000));
  std::vector<std::vector<char>> rb(1100, std::vector<char>(64));
  std::vector<iovec> riovs(1100);
  for (size_t i = 0; i < v.size(); ++i) {
    riovs[i] = {rb[i].data(), rb[i].size()};
    v[i] = {};
    v[i].msg_hdr.msg_iov = &riovs[i];
    v[i].msg_hdr.msg_iovlen = 1;
  }
  int n = recvmmsg(p.b.get(), v.data(), 1100, MSG_DONTWAIT, nullptr);
  ASSERT_GT(n, 0) << strerror(errno);
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += v[i].msg_len;
  EXPECT_EQ(total, 1000u);
  // MSG_CMSG_COMPAT from a 64-bit caller.
  EXPECT_THAT(sendmmsg(p.a.get(), v.data(), 1, 0x80000000),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(
      recvmmsg(p.b.get(), v.data(), 1, 0x80000000 | MSG_DONTWAIT, nullptr),
      SyscallFailsWithErrno(EINVAL));
}

// ---- 5. Randomized msghdr (seeded, bounded). ----

// Every errno Linux's sendmsg/recvmsg on an AF_UNIX socket can give for
// garbage from the caller (net/socket.c, net/core/scm.c, net/unix).
const std::set<int>& PlausibleErrnos() {
  static const std::set<int> s = {
      EFAULT,       EINVAL,  EMSGSIZE,     ENOBUFS,      EBADF,     EAGAIN,
      EOPNOTSUPP,   EPERM,   ESRCH,        EISCONN,      ENOTCONN,  EPIPE,
      ENOENT,       ENOTDIR, ECONNREFUSED, ETOOMANYREFS, ENOMEM,    EACCES,
      ENAMETOOLONG, ELOOP,   ECONNRESET,   EDESTADDRREQ, EPROTOTYPE};
  return s;
}

TEST(UnixHostileFuzzTest, RandomMsghdrs) {
  LeakCheck leaks;
  Pipe pipe;
  const char* trace_path = getenv("UNIX_HOSTILE_FUZZ_TRACE");
  // UNIX_HOSTILE_FUZZ_TRACE=FILE (or "-": stdout) records every call's
  // result, to compare a native run with a sandboxed one.
  FILE* trace = trace_path == nullptr          ? nullptr
                : strcmp(trace_path, "-") == 0 ? stdout
                                               : fopen(trace_path, "w");
  std::mt19937_64 rng(0x5eed2026);
  auto pick = [&](uint64_t n) { return rng() % n; };
  EdgeBuffer edge;
  // Guest memory: a data buffer, iovec and control arrays.
  std::vector<char> data(4096, 'z');
  alignas(cmsghdr) static char control[1024];
  // As many iovecs as the largest count that gets past UIO_MAXIOV, so
  // that every one read is the test's (not whatever lies beyond).
  static iovec iovs[1025];
  sockaddr_storage name = {};
  const int kIters = 3000;
  int ok = 0, failed = 0;
  for (int type : kTypes) {
    SocketPair p(type);
    ASSERT_TRUE(p.ok());
    leaks.Note(p.a.get());
    leaks.Note(p.b.get());
    for (int it = 0; it < kIters; ++it) {
      // Name.
      void* nm = nullptr;
      int namelen = 0;
      switch (pick(6)) {
        case 0:
          break;
        case 1:
          nm = NoAccess();
          namelen = static_cast<int>(pick(200));
          break;
        default: {
          nm = &name;
          memset(&name, 0, sizeof(name));
          sockaddr_un* un = reinterpret_cast<sockaddr_un*>(&name);
          un->sun_family = pick(4) ? AF_UNIX : static_cast<sa_family_t>(rng());
          // Names that exist nowhere: an abstract or a relative path with
          // this process's tag.
          std::string n = (pick(2) ? std::string(1, '\0') : std::string()) +
                          "hostile-fuzz-none." + std::to_string(getpid());
          memcpy(un->sun_path, n.data(), n.size());
          const int lens[] = {
              -1,
              0,
              1,
              2,
              3,
              static_cast<int>(offsetof(sockaddr_un, sun_path) + n.size()),
              110,
              111,
              128,
              129,
              INT_MAX,
              static_cast<int>(rng())};
          namelen = lens[pick(12)];
        }
      }
      // Iovecs.
      iovec* iov = iovs;
      size_t iovlen = pick(4);
      switch (pick(8)) {
        case 0:
          iov = nullptr;
          break;
        case 1:
          iov = reinterpret_cast<iovec*>(NoAccess());
          break;
        case 2:
          iov = reinterpret_cast<iovec*>(edge.end) - 1;
          *iov = {data.data(), pick(8)};
          break;
        default:
          break;
      }
      const size_t iovlens[] = {
          0, 1, 2, 3, 8, 1024, 1025, SIZE_MAX, static_cast<size_t>(rng())};
      if (pick(5) == 0) iovlen = iovlens[pick(9)];
      for (size_t k = 0; k < 1025; ++k) {
        iovec& v = iovs[k];
        if (k >= 8) {
          v = iovs[k % 8];
          continue;
        }
        switch (pick(8)) {
          case 0:
            v = {nullptr, pick(16)};
            break;
          case 1:
            v = {NoAccess(), pick(16)};
            break;
          case 2:
            v = {edge.end - 4, pick(16)};
            break;
          case 3:
            v = {data.data(), static_cast<size_t>(SSIZE_MAX) + pick(4)};
            break;
          default:
            v = {data.data() + pick(2048), pick(2048)};
        }
      }
      if (iov == iovs && iovlen > 1025 && pick(2)) iovlen = 8;
      // Control.
      void* ctl = control;
      const size_t ctlens[] = {0,
                               1,
                               15,
                               16,
                               17,
                               CMSG_SPACE(4),
                               CMSG_SPACE(8) + 3,
                               sizeof(control),
                               size_t{INT_MAX} + 1,
                               SIZE_MAX,
                               pick(sizeof(control))};
      size_t controllen = ctlens[pick(11)];
      switch (pick(10)) {
        case 0:
          ctl = nullptr;
          break;
        case 1:
          ctl = NoAccess();
          break;
        default:
          break;
      }
      memset(control, 0, sizeof(control));
      for (size_t off = 0;
           off + sizeof(cmsghdr) <= sizeof(control) && pick(3) != 0;) {
        cmsghdr* h = reinterpret_cast<cmsghdr*>(control + off);
        const int nfds = static_cast<int>(pick(4));
        const size_t cls[] = {0,
                              1,
                              sizeof(cmsghdr) - 1,
                              CMSG_LEN(nfds * sizeof(int)),
                              CMSG_LEN(nfds * sizeof(int)),
                              CMSG_LEN(nfds * sizeof(int)) + 1,
                              CMSG_LEN(sizeof(ucred)),
                              sizeof(control) + 1,
                              SIZE_MAX,
                              static_cast<size_t>(rng())};
        h->cmsg_len = cls[pick(10)];
        h->cmsg_level = pick(4) ? SOL_SOCKET : static_cast<int>(rng());
        const int types[] = {SCM_RIGHTS, SCM_RIGHTS, SCM_CREDENTIALS,
                             static_cast<int>(pick(64))};
        h->cmsg_type = types[pick(4)];
        if (h->cmsg_type == SCM_CREDENTIALS && pick(2)) {
          ucred cr = {getpid(), getuid(), getgid()};
          if (pick(3) == 0) cr.pid = static_cast<pid_t>(rng());
          memcpy(CMSG_DATA(h), &cr, sizeof(cr));
        } else {
          for (int i = 0; i < nfds; ++i) {
            const int fds[] = {pipe.w.get(), pipe.r.get(),
                               p.a.get(),    -1,
                               1000,         static_cast<int>(rng())};
            int fd = fds[pick(6)];
            memcpy(CMSG_DATA(h) + i * sizeof(int), &fd, sizeof(fd));
          }
        }
        off += CMSG_SPACE(nfds * sizeof(int)) + (pick(4) == 0 ? 4 : 0);
      }
      int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
      const int extra[] = {0,         0,          0,           MSG_EOR,
                           MSG_OOB,   MSG_MORE,   MSG_CONFIRM, MSG_PEEK,
                           MSG_TRUNC, MSG_WAITALL};
      flags |= extra[pick(10)];
      msghdr m = {};
      m.msg_name = nm;
      m.msg_namelen = static_cast<socklen_t>(namelen);
      m.msg_iov = iov;
      m.msg_iovlen = iovlen;
      m.msg_control = ctl;
      m.msg_controllen = controllen;
      m.msg_flags = static_cast<int>(rng());
      ssize_t r = sendmsg(p.a.get(), &m, flags);
      int e = r < 0 ? errno : 0;
      if (trace) {
        fprintf(trace,
                "s %d %d %zd %d  # name=%s/%d iov=%s/%zu ctl=%s/%zu "
                "flags=%#x\n",
                type, it, r, e,
                nm == nullptr      ? "null"
                : nm == NoAccess() ? "bad"
                                   : "ok",
                namelen,
                iov == iovs      ? "ok"
                : iov == nullptr ? "null"
                                 : "bad",
                iovlen,
                ctl == control   ? "ok"
                : ctl == nullptr ? "null"
                                 : "bad",
                controllen, flags);
        if (getenv("UNIX_HOSTILE_FUZZ_CMSGS") != nullptr) {
          for (size_t off = 0; off + sizeof(cmsghdr) <= sizeof(control);) {
            cmsghdr* h = reinterpret_cast<cmsghdr*>(control + off);
            if (h->cmsg_len == 0 && h->cmsg_level == 0) break;
            int v[3];
            memcpy(v, CMSG_DATA(h), sizeof(v));
            fprintf(trace, "   cmsg@%zu len=%zu level=%d type=%d %d %d %d\n",
                    off, static_cast<size_t>(h->cmsg_len), h->cmsg_level,
                    h->cmsg_type, v[0], v[1], v[2]);
            if (h->cmsg_len < sizeof(cmsghdr) || h->cmsg_len > 1024) break;
            off += CMSG_ALIGN(h->cmsg_len);
          }
        }
      }
      if (r < 0) {
        ++failed;
        EXPECT_TRUE(PlausibleErrnos().count(e))
            << "sendmsg iteration " << it << " type " << type << ": errno " << e
            << " (" << strerror(e) << ")";
      } else {
        ++ok;
      }
      // A hostile receive now and then; each drains one message.
      if (pick(3) == 0) {
        msghdr rm = {};
        char rbuf[64];
        iovec riov[2] = {{rbuf, pick(64)}, {pick(4) ? rbuf : NoAccess(), 8}};
        rm.msg_iov = pick(8) ? riov : reinterpret_cast<iovec*>(NoAccess());
        rm.msg_iovlen = pick(8) ? 1 + pick(2) : 1025;
        alignas(cmsghdr) char rctl[256];
        rm.msg_control = pick(6) ? static_cast<void*>(rctl) : NoAccess();
        const size_t rls[] = {0, 1, 16, 20, 24, sizeof(rctl)};
        rm.msg_controllen = rls[pick(6)];
        sockaddr_storage from;
        rm.msg_name = pick(2) ? &from : nullptr;
        rm.msg_namelen = pick(5) ? sizeof(from) : static_cast<socklen_t>(-1);
        int rflags = MSG_DONTWAIT | (pick(4) == 0 ? MSG_PEEK : 0) |
                     (pick(4) == 0 ? MSG_CMSG_CLOEXEC : 0) |
                     (pick(6) == 0 ? MSG_TRUNC : 0);
        ssize_t rr = recvmsg(p.b.get(), &rm, rflags);
        int re = rr < 0 ? errno : 0;
        if (trace) fprintf(trace, "r %d %d %zd %d\n", type, it, rr, re);
        if (rr < 0) {
          EXPECT_TRUE(PlausibleErrnos().count(re))
              << "recvmsg iteration " << it << ": errno " << re;
        } else if (rm.msg_control == rctl) {
          socklen_t got = std::min<socklen_t>(rm.msg_controllen, sizeof(rctl));
          rm.msg_controllen = got;
          for (cmsghdr* h = CMSG_FIRSTHDR(&rm); h != nullptr;
               h = CMSG_NXTHDR(&rm, h)) {
            if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) {
              continue;
            }
            int k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (int i = 0; i < k; ++i) {
              int fd;
              memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
              if (fd > 2) close(fd);
            }
          }
        }
      }
    }
    // Whatever is still queued goes with the pair.
  }
  if (trace != nullptr && trace != stdout) fclose(trace);
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
  pipe.w.reset();
  EXPECT_TRUE(HupWithin(pipe.r.get()));
}

}  // namespace
}  // namespace sandbox::testutil
