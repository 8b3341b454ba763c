// AF_UNIX readiness: the poll bits (POLLIN, POLLOUT, POLLHUP, POLLRDHUP,
// POLLERR) Linux reports in each state of a stream, record and datagram
// socket (fresh, with data, after either side's shutdown, after the peer's
// close with and without unread data, listening with and without a pending
// connection, a datagram sender to a full receiver), select, wake-ups of a
// blocked poll, epoll edge-triggered notification, and SIGIO with O_ASYNC.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr short kAll = POLLIN | POLLOUT | POLLRDHUP | POLLPRI;

std::string Bits(short r) {
  std::string s;
  if (r < 0) return "poll failed";
  if (r & POLLIN) s += "IN ";
  if (r & POLLPRI) s += "PRI ";
  if (r & POLLOUT) s += "OUT ";
  if (r & POLLERR) s += "ERR ";
  if (r & POLLHUP) s += "HUP ";
  if (r & POLLRDHUP) s += "RDHUP ";
  if (r & POLLNVAL) s += "NVAL ";
  return s.empty() ? "none" : s;
}

#define EXPECT_REVENTS(fd, want)                          \
  do {                                                    \
    short got_ = PollNow(fd, kAll);                       \
    EXPECT_EQ(got_, static_cast<short>(want))             \
        << "got " << Bits(got_) << "want " << Bits(want); \
  } while (0)

class ConnectedTest : public ::testing::TestWithParam<int> {};

TEST_P(ConnectedTest, FreshPairIsWritableOnly) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  EXPECT_REVENTS(p.a.get(), POLLOUT);
  EXPECT_REVENTS(p.b.get(), POLLOUT);
}

TEST_P(ConnectedTest, DataMakesThePeerReadable) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "d", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_REVENTS(p.b.get(), POLLIN | POLLOUT);
  EXPECT_REVENTS(p.a.get(), POLLOUT);
  char c;
  ASSERT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_REVENTS(p.b.get(), POLLOUT);
}

bool IsDgram() { return ConnectedTest::GetParam() == SOCK_DGRAM; }

TEST_P(ConnectedTest, PeerShutdownWriteIsRdhup) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  // A datagram socket's shutdown is its own: the peer sees nothing.
  EXPECT_REVENTS(p.b.get(), IsDgram() ? POLLOUT : POLLIN | POLLRDHUP | POLLOUT);
  // The side that shut down its writing stays "writable" (a write fails
  // at once with EPIPE).
  EXPECT_REVENTS(p.a.get(), POLLOUT);
}

TEST_P(ConnectedTest, BothDirectionsShutIsHup) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(shutdown(p.a.get(), SHUT_RDWR), SyscallSucceeds());
  EXPECT_REVENTS(p.a.get(), POLLIN | POLLRDHUP | POLLHUP | POLLOUT);
  EXPECT_REVENTS(p.b.get(),
                 IsDgram() ? POLLOUT : POLLIN | POLLRDHUP | POLLHUP | POLLOUT);
}

TEST_P(ConnectedTest, OwnShutdownReadIsRdhup) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(shutdown(p.b.get(), SHUT_RD), SyscallSucceeds());
  EXPECT_REVENTS(p.b.get(), POLLIN | POLLRDHUP | POLLOUT);
}

TEST_P(ConnectedTest, PeerCloseIsHupAndRdhup) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  p.b.reset();
  short got = PollNow(p.a.get(), kAll);
  if (IsDgram()) {
    // A datagram peer does not hang up: a send finds out (ECONNREFUSED).
    EXPECT_EQ(got, POLLOUT) << Bits(got);
    return;
  }
  short want = POLLIN | POLLRDHUP | POLLHUP;
  EXPECT_EQ(got & ~POLLOUT, want) << Bits(got);
  if (GetParam() == SOCK_STREAM) EXPECT_TRUE(got & POLLOUT) << Bits(got);
}

TEST_P(ConnectedTest, PeerCloseWithUnreadDataIsErrUntilRead) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "u", 1, 0), SyscallSucceedsWithValue(1));
  p.b.reset();
  short got = PollNow(p.a.get(), kAll);
  if (IsDgram()) {
    EXPECT_EQ(got, POLLOUT) << Bits(got);  // Datagram peers do not reset.
    return;
  }
  EXPECT_EQ(got & ~POLLOUT, POLLIN | POLLRDHUP | POLLHUP | POLLERR)
      << Bits(got);
  // POLLERR is reported even when not asked for.
  EXPECT_TRUE(PollNow(p.a.get(), 0) & POLLERR);
  char c;
  EXPECT_THAT(recv(p.a.get(), &c, 1, 0), SyscallFailsWithErrno(ECONNRESET));
  got = PollNow(p.a.get(), kAll);
  EXPECT_EQ(got & POLLERR, 0) << Bits(got);
}

TEST_P(ConnectedTest, FullSenderIsNotWritable) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_GT(FillWithDontwait(p.a.get(), 2048), 0);
  EXPECT_REVENTS(p.a.get(), 0);
  EXPECT_REVENTS(p.b.get(), POLLIN | POLLOUT);
  ASSERT_GT(DrainWithDontwait(p.b.get()), 0);
  EXPECT_REVENTS(p.a.get(), POLLOUT);
}

TEST_P(ConnectedTest, BlockedPollWakesForData) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    usleep(50 * 1000);
    EXPECT_THAT(send(p.a.get(), "w", 1, 0), SyscallSucceedsWithValue(1));
  });
  pollfd pfd = {p.b.get(), POLLIN, 0};
  EXPECT_THAT(poll(&pfd, 1, 10000), SyscallSucceedsWithValue(1));
  t.join();
  EXPECT_EQ(pfd.revents, POLLIN);
}

TEST_P(ConnectedTest, BlockedPollWakesForRoom) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_GT(FillWithDontwait(p.a.get(), 2048), 0);
  std::thread t([&] {
    usleep(50 * 1000);
    DrainWithDontwait(p.b.get());
  });
  pollfd pfd = {p.a.get(), POLLOUT, 0};
  EXPECT_THAT(poll(&pfd, 1, 10000), SyscallSucceedsWithValue(1));
  t.join();
  EXPECT_EQ(pfd.revents, POLLOUT);
}

TEST_P(ConnectedTest, BlockedPollWakesAtPeerClose) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    usleep(50 * 1000);
    p.b.reset();
  });
  pollfd pfd = {p.a.get(), POLLIN, 0};
  // A datagram socket has nothing to report: the poll times out.
  EXPECT_THAT(poll(&pfd, 1, IsDgram() ? 300 : 10000),
              SyscallSucceedsWithValue(IsDgram() ? 0 : 1));
  t.join();
  EXPECT_EQ(pfd.revents, IsDgram() ? 0 : POLLIN | POLLHUP);
}

TEST_P(ConnectedTest, SelectSeesReadAndWrite) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "s", 1, 0), SyscallSucceedsWithValue(1));
  fd_set r, w;
  FD_ZERO(&r);
  FD_ZERO(&w);
  FD_SET(p.a.get(), &r);
  FD_SET(p.b.get(), &r);
  FD_SET(p.a.get(), &w);
  timeval tv = {0, 0};
  int nfds = std::max(p.a.get(), p.b.get()) + 1;
  ASSERT_THAT(select(nfds, &r, &w, nullptr, &tv), SyscallSucceedsWithValue(2));
  EXPECT_TRUE(FD_ISSET(p.b.get(), &r));
  EXPECT_FALSE(FD_ISSET(p.a.get(), &r));
  EXPECT_TRUE(FD_ISSET(p.a.get(), &w));
}

TEST_P(ConnectedTest, EpollEdgeTriggeredFiresOncePerArrival) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_TRUE(ep.valid());
  epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.fd = p.b.get();
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.b.get(), &ev),
              SyscallSucceeds());
  epoll_event out[2];
  EXPECT_THAT(epoll_wait(ep.get(), out, 2, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(send(p.a.get(), "1", 1, 0), SyscallSucceedsWithValue(1));
  ASSERT_THAT(epoll_wait(ep.get(), out, 2, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(out[0].events, static_cast<uint32_t>(EPOLLIN));
  EXPECT_EQ(out[0].data.fd, p.b.get());
  // Not again for data already reported...
  EXPECT_THAT(epoll_wait(ep.get(), out, 2, 0), SyscallSucceedsWithValue(0));
  // ...but again for new data, even unread old data is still there.
  ASSERT_THAT(send(p.a.get(), "2", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(epoll_wait(ep.get(), out, 2, 0), SyscallSucceedsWithValue(1));
  // A blocked epoll_wait wakes for a write from another thread.
  std::thread t([&] {
    usleep(50 * 1000);
    EXPECT_THAT(send(p.a.get(), "3", 1, 0), SyscallSucceedsWithValue(1));
  });
  EXPECT_THAT(epoll_wait(ep.get(), out, 2, 10000), SyscallSucceedsWithValue(1));
  t.join();
}

TEST_P(ConnectedTest, EpollLevelTriggeredRepeats) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.b.get(), &ev),
              SyscallSucceeds());
  ASSERT_THAT(send(p.a.get(), "1", 1, 0), SyscallSucceedsWithValue(1));
  epoll_event out;
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(1));
  char c;
  ASSERT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(0));
}

TEST_P(ConnectedTest, EpollEdgeTriggeredOutAfterTheQueueDrains) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_TRUE(ep.valid());
  epoll_event ev = {};
  ev.events = EPOLLOUT | EPOLLET;
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.a.get(), &ev),
              SyscallSucceeds());
  epoll_event out;
  // Writable at once, reported once.
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(0));
  ASSERT_GT(FillWithDontwait(p.a.get(), 2048), 0);
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(0));
  // Room again: one new edge.
  ASSERT_GT(DrainWithDontwait(p.b.get()), 0);
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 1000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(out.events & EPOLLOUT, static_cast<uint32_t>(EPOLLOUT));
}

TEST_P(ConnectedTest, EpollRdhupOnPeerShutdown) {
  SocketPair p(GetParam());
  ASSERT_TRUE(p.ok());
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.b.get(), &ev),
              SyscallSucceeds());
  epoll_event out;
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  if (IsDgram()) {
    // A datagram socket's shutdown is its own: no event for the peer.
    EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 100),
                SyscallSucceedsWithValue(0));
    return;
  }
  ASSERT_THAT(epoll_wait(ep.get(), &out, 1, 1000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(out.events, static_cast<uint32_t>(EPOLLIN | EPOLLRDHUP));
  // The peer's close then adds EPOLLHUP.
  p.a.reset();
  ASSERT_THAT(epoll_wait(ep.get(), &out, 1, 1000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(out.events, static_cast<uint32_t>(EPOLLIN | EPOLLRDHUP | EPOLLHUP));
}

INSTANTIATE_TEST_SUITE_P(UnixPoll, ConnectedTest,
                         ::testing::Values(SOCK_STREAM, SOCK_SEQPACKET,
                                           SOCK_DGRAM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           switch (info.param) {
                             case SOCK_STREAM:
                               return std::string("Stream");
                             case SOCK_SEQPACKET:
                               return std::string("Seqpacket");
                             default:
                               return std::string("Dgram");
                           }
                         });

TEST(UnixPollTest, UnconnectedStreamIsHupAndWritable) {
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    FileDescriptor fd = UnixSocket(type);
    ASSERT_TRUE(fd.valid());
    short got = PollNow(fd.get(), kAll);
    EXPECT_EQ(got & POLLHUP, POLLHUP) << type << ": " << Bits(got);
    EXPECT_EQ(got & (POLLIN | POLLERR | POLLRDHUP), 0)
        << type << ": " << Bits(got);
  }
}

TEST(UnixPollTest, UnboundDatagramIsWritable) {
  FileDescriptor fd = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(fd.valid());
  EXPECT_REVENTS(fd.get(), POLLOUT);
}

TEST(UnixPollTest, ListenerIsReadableWithAPendingConnection) {
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    UnixAddr addr = UnixAddr::Abstract(AbstractName("pl"));
    FileDescriptor l = Listener(type, addr);
    ASSERT_TRUE(l.valid());
    EXPECT_REVENTS(l.get(), 0);
    FileDescriptor c = ConnectTo(type, addr);
    ASSERT_TRUE(c.valid());
    EXPECT_REVENTS(l.get(), POLLIN);
    EXPECT_REVENTS(c.get(), POLLOUT);
    FileDescriptor s(accept(l.get(), nullptr, nullptr));
    ASSERT_TRUE(s.valid());
    EXPECT_REVENTS(l.get(), 0);
    EXPECT_REVENTS(s.get(), POLLOUT);
  }
}

TEST(UnixPollTest, BlockedPollOnAListenerWakesForConnect) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("plw"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c;
  std::thread t([&] {
    usleep(50 * 1000);
    c = ConnectTo(SOCK_STREAM, addr);
  });
  pollfd pfd = {l.get(), POLLIN, 0};
  EXPECT_THAT(poll(&pfd, 1, 10000), SyscallSucceedsWithValue(1));
  t.join();
  EXPECT_EQ(pfd.revents, POLLIN);
  EXPECT_TRUE(c.valid());
}

TEST(UnixPollTest, DatagramToAFullReceiverIsNotWritable) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("fullrecv"));
  FileDescriptor r = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(r.get(), addr.sa(), addr.len), SyscallSucceeds());
  FileDescriptor s = ConnectTo(SOCK_DGRAM, addr);
  ASSERT_TRUE(s.valid());
  EXPECT_REVENTS(s.get(), POLLOUT);
  // The receiver's queue fills (net.unix.max_dgram_qlen datagrams, or its
  // buffer), whichever comes first.
  ASSERT_GT(FillWithDontwait(s.get(), 1, 100000), 0);
  EXPECT_REVENTS(s.get(), 0);
  EXPECT_REVENTS(r.get(), POLLIN | POLLOUT);
  // A poll blocked on the sender wakes when the receiver drains its queue
  // (whether the queue length or the sender's buffer was the limit).
  std::thread t([&] {
    usleep(50 * 1000);
    EXPECT_GT(DrainWithDontwait(r.get()), 0);
  });
  pollfd pfd = {s.get(), POLLOUT, 0};
  EXPECT_THAT(poll(&pfd, 1, 10000), SyscallSucceedsWithValue(1));
  t.join();
  EXPECT_EQ(pfd.revents, POLLOUT);
}

TEST(UnixPollTest, DatagramQueueLimitIsMaxDgramQlen) {
  long qlen =
      strtol(ReadFileOrEmpty("/proc/sys/net/unix/max_dgram_qlen").c_str(),
             nullptr, 10);
  if (qlen <= 0) GTEST_SKIP() << "cannot read net.unix.max_dgram_qlen";
  UnixAddr addr = UnixAddr::Abstract(AbstractName("qlen"));
  FileDescriptor r = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(r.get(), addr.sa(), addr.len), SyscallSucceeds());
  FileDescriptor s = ConnectTo(SOCK_DGRAM, addr);
  ASSERT_TRUE(s.valid());
  // Linux lets the queue grow one past the limit before refusing.
  long sent = FillWithDontwait(s.get(), 1, 100000);
  if (sent < qlen + 1) {
    GTEST_SKIP() << "the sender's buffer fills before a queue of " << qlen;
  }
  EXPECT_EQ(sent, qlen + 1);
}

TEST(UnixPollTest, OAsyncSendsSigioToTheOwnerWhenDataArrives) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGIO);
  ASSERT_THAT(pthread_sigmask(SIG_BLOCK, &set, &old), SyscallSucceeds());
  ASSERT_THAT(fcntl(p.b.get(), F_SETOWN, getpid()), SyscallSucceeds());
  ASSERT_THAT(fcntl(p.b.get(), F_SETFL, O_ASYNC), SyscallSucceeds());
  EXPECT_THAT(fcntl(p.b.get(), F_GETOWN), SyscallSucceedsWithValue(getpid()));
  timespec zero = {0, 0};
  EXPECT_THAT(sigtimedwait(&set, nullptr, &zero),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(send(p.a.get(), "io", 2, 0), SyscallSucceedsWithValue(2));
  timespec wait = {10, 0};
  siginfo_t info = {};
  EXPECT_THAT(sigtimedwait(&set, &info, &wait),
              SyscallSucceedsWithValue(SIGIO));
  // Without O_ASYNC, no more signals.
  ASSERT_THAT(fcntl(p.b.get(), F_SETFL, 0), SyscallSucceeds());
  ASSERT_THAT(send(p.a.get(), "no", 2, 0), SyscallSucceedsWithValue(2));
  EXPECT_THAT(sigtimedwait(&set, nullptr, &zero),
              SyscallFailsWithErrno(EAGAIN));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST(UnixPollTest, EpollEdgeOnAListenerPerConnection) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("epl"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLET;
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, l.get(), &ev),
              SyscallSucceeds());
  epoll_event out;
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(0));
  FileDescriptor c1 = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c1.valid());
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 1000), SyscallSucceedsWithValue(1));
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 0), SyscallSucceedsWithValue(0));
  FileDescriptor c2 = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c2.valid());
  EXPECT_THAT(epoll_wait(ep.get(), &out, 1, 1000), SyscallSucceedsWithValue(1));
}

}  // namespace
}  // namespace sandbox::testutil
