// The socket syscalls over a fake family (a datagram pair registered as
// AF_UNIX in this test only): argument decoding, the MessageIo over guest
// iovecs with partial faults, SCM_RIGHTS installation, names and options,
// and read/write on sockets. The real families have their own tests.
#include "sentry/net/socket.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cstring>
#include <deque>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/abi/syscalls.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"
#include "sentry/net/family.h"
#include "sentry/syscalls/table.h"

namespace sandbox::syscalls {
namespace {

namespace nr = abi::nr;

// One direction of a fake pair: whole messages.
struct Queue {
  absl::Mutex mu;
  struct Msg {
    std::vector<uint8_t> data;
    net::ControlMessages cm;
  };
  std::deque<Msg> q ABSL_GUARDED_BY(mu);
  bool shut ABSL_GUARDED_BY(mu) = false;
};

class FakeSocket : public net::Socket {
 public:
  FakeSocket(int type, uint32_t flags, std::shared_ptr<Queue> in,
             std::shared_ptr<Queue> out)
      : Socket(AF_UNIX, type, 0, flags, net::Ucred{}),
        in_(std::move(in)),
        out_(std::move(out)) {}

  KResult<size_t> SendMsg(net::Caller&, net::MessageIo& io,
                          net::SendRequest& req) override {
    Queue::Msg m;
    m.data.resize(io.size());
    size_t got = 0;
    if (!m.data.empty()) {
      TRY(got, io.CopyIn(0, absl::MakeSpan(m.data)));
    }
    m.data.resize(got);
    m.cm = std::move(req.control);
    absl::MutexLock l(&out_->mu);
    if (out_->shut) return kEPIPE;
    out_->q.push_back(std::move(m));
    return got;
  }
  KResult<size_t> RecvMsg(net::Caller&, net::MessageIo& io,
                          net::RecvRequest& req) override {
    absl::MutexLock l(&in_->mu);
    if (in_->q.empty()) return kEAGAIN;
    Queue::Msg m = std::move(in_->q.front());
    in_->q.pop_front();
    size_t n = std::min(m.data.size(), io.size());
    if (n > 0) {
      TRY(n, io.CopyOut(0, absl::MakeConstSpan(m.data.data(), n)));
    }
    if (n < m.data.size()) req.msg_flags |= MSG_TRUNC;
    req.control = std::move(m.cm);
    const char from[] =
        "\x01\x00"
        "peer";
    req.from = net::SockAddr::From(from, sizeof(from) - 1);
    return n;
  }
  KResult<net::SockAddr> GetSockName(net::Caller&) override {
    const char me[] =
        "\x01\x00"
        "/some/path";
    return net::SockAddr::From(me, sizeof(me));
  }
  KResult<void> Shutdown(net::Caller&, int how) override {
    if (how != SHUT_RD) {
      absl::MutexLock l(&out_->mu);
      out_->shut = true;
    }
    return OkResult();
  }
  KResult<void> Listen(net::Caller&, int backlog) override {
    last_backlog = backlog;
    set_listening(true);
    return OkResult();
  }
  KResult<vfs::FileRef> Accept(net::Caller&, uint32_t flags,
                               net::SockAddr* peer) override {
    auto q = std::make_shared<Queue>();
    if (peer != nullptr) {
      const char p[] =
          "\x01\x00"
          "accepted-peer";
      *peer = net::SockAddr::From(p, sizeof(p));
    }
    return vfs::FileRef(std::make_shared<FakeSocket>(type(), flags, q, q));
  }

  int last_backlog = -1;

 private:
  std::shared_ptr<Queue> in_, out_;
};

KResult<net::SocketRef> Create(net::Caller&, int type, int, uint32_t flags) {
  auto q = std::make_shared<Queue>();
  return net::SocketRef(std::make_shared<FakeSocket>(type, flags, q, q));
}

KResult<net::SocketPair> Pair(net::Caller&, int type, int, uint32_t flags) {
  auto a = std::make_shared<Queue>(), b = std::make_shared<Queue>();
  return net::SocketPair(std::make_shared<FakeSocket>(type, flags, a, b),
                         std::make_shared<FakeSocket>(type, flags, b, a));
}

class SocketSyscallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    net::RegisterFamily({AF_UNIX, "fake", &Create, &Pair});
    table_ = SyscallTable::CreateLinux64();
    kernel_ = std::make_unique<kernel::Kernel>(&platform_, *table_,
                                               kernel::KernelOptions{});
    auto mm = mm::MemoryManager::Create(platform_, {.randomize = false});
    ASSERT_TRUE(mm.ok());
    auto mf = platform::MemoryFile::Create(uint64_t{16} << 20);
    ASSERT_TRUE(mf.ok());
    mf_ = std::move(mf).value();
    ns_ = vfs::MountNamespace::Create(
        fs::tmpfs::Filesystem::Create(*mf_, {.root_mode = 0755}), 0);
    kernel::NewProcessArgs args;
    args.exe_path = "/bin/guest";
    args.creds = kernel::Credentials::Root();
    args.fs = std::make_shared<vfs::FsContext>(ns_->Root(), ns_->Root());
    args.mm = std::move(mm).value();
    auto task = kernel_->NewProcess(std::move(args));
    ASSERT_TRUE(task.ok());
    task_ = task.value();
    // Two pages, the second made inaccessible: buf_ + 4096 faults.
    auto a = Call(nr::mmap, 0, 2 * 4096, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, static_cast<uint64_t>(-1), 0);
    ASSERT_TRUE(a.ok());
    buf_ = a.value();
    ASSERT_TRUE(Call(nr::mprotect, buf_ + 4096, 4096, PROT_NONE).ok());
  }
  void TearDown() override {
    kernel_.reset();
    ns_.reset();
  }

  KResult<uint64_t> Call(int n, uint64_t a0 = 0, uint64_t a1 = 0,
                         uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0,
                         uint64_t a5 = 0) {
    kernel::SyscallArgs args{{a0, a1, a2, a3, a4, a5}};
    return table_->Dispatch(*task_, n, args);
  }
  void Put(uint64_t addr, const void* p, size_t n) {
    ASSERT_TRUE(task_->CopyOutFull(addr, p, n).ok());
  }
  template <typename T>
  T Get(uint64_t addr) {
    T v{};
    EXPECT_TRUE(task_->CopyInFull(addr, &v, sizeof(T)).ok());
    return v;
  }
  // A socketpair's two descriptors.
  void MakePair(int type, int* a, int* b) {
    ASSERT_TRUE(Call(nr::socketpair, AF_UNIX, type, 0, buf_).ok());
    *a = Get<int32_t>(buf_);
    *b = Get<int32_t>(buf_ + 4);
  }

  mm::testing::FakePlatform platform_;
  std::unique_ptr<platform::MemoryFile> mf_;  // outlives the file system
  std::shared_ptr<vfs::MountNamespace> ns_;
  std::unique_ptr<SyscallTable> table_;
  std::unique_ptr<kernel::Kernel> kernel_;
  kernel::Task* task_ = nullptr;
  uint64_t buf_ = 0;
};

TEST_F(SocketSyscallsTest, SocketFlagsAndStat) {
  auto fd =
      Call(nr::socket, AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(Call(nr::fcntl, fd.value(), F_GETFD).value(), FD_CLOEXEC);
  EXPECT_EQ(Call(nr::fcntl, fd.value(), F_GETFL).value(),
            uint64_t{O_RDWR | O_NONBLOCK});
  ASSERT_TRUE(Call(nr::fstat, fd.value(), buf_).ok());
  EXPECT_TRUE(S_ISSOCK(Get<struct stat>(buf_).st_mode));
  EXPECT_EQ(Call(nr::socket, AF_UNIX, SOCK_DGRAM | 0x100000, 0).error(),
            kEINVAL);
  EXPECT_EQ(Call(nr::socket, 46, SOCK_DGRAM, 0).error(), kEAFNOSUPPORT);
}

TEST_F(SocketSyscallsTest, SocketpairWritesTheArray) {
  int a, b;
  MakePair(SOCK_DGRAM, &a, &b);
  EXPECT_GE(a, 0);
  EXPECT_NE(a, b);
  // A bad array: EFAULT, nothing left installed.
  size_t before = task_->fd_table().Count();
  EXPECT_EQ(Call(nr::socketpair, AF_UNIX, SOCK_DGRAM, 0, buf_ + 4092).error(),
            kEFAULT);
  EXPECT_EQ(task_->fd_table().Count(), before);
}

TEST_F(SocketSyscallsTest, SendmsgPartialFaultAndRecvmsg) {
  int a, b;
  MakePair(SOCK_DGRAM, &a, &b);
  // Data: 6 bytes at the end of the good page, then 10 bytes on the bad
  // one: the message carries the 6 readable bytes.
  const uint64_t data = buf_ + 4090;
  Put(data, "hello!", 6);
  iovec iov[2] = {{reinterpret_cast<void*>(data), 6},
                  {reinterpret_cast<void*>(buf_ + 4096), 10}};
  Put(buf_ + 1024, iov, sizeof(iov));
  msghdr m = {};
  m.msg_iov = reinterpret_cast<iovec*>(buf_ + 1024);
  m.msg_iovlen = 2;
  Put(buf_, &m, sizeof(m));
  EXPECT_EQ(Call(nr::sendmsg, a, buf_, 0).value(), 6u);
  // Receive into 4 bytes: MSG_TRUNC, the sender's name stored.
  iovec riov = {reinterpret_cast<void*>(buf_ + 2048), 4};
  Put(buf_ + 1024, &riov, sizeof(riov));
  msghdr r = {};
  r.msg_name = reinterpret_cast<void*>(buf_ + 3000);
  r.msg_namelen = 128;
  r.msg_iov = reinterpret_cast<iovec*>(buf_ + 1024);
  r.msg_iovlen = 1;
  Put(buf_, &r, sizeof(r));
  EXPECT_EQ(Call(nr::recvmsg, b, buf_, 0).value(), 4u);
  msghdr out = Get<msghdr>(buf_);
  EXPECT_EQ(out.msg_flags, MSG_TRUNC);
  EXPECT_EQ(out.msg_namelen, 6);
  EXPECT_EQ(out.msg_controllen, 0u);
  char got[4];
  ASSERT_TRUE(task_->CopyInFull(buf_ + 2048, got, 4).ok());
  EXPECT_EQ(std::string(got, 4), "hell");
  // Only bad bytes: EFAULT.
  iovec bad = {reinterpret_cast<void*>(buf_ + 4096), 4};
  Put(buf_ + 1024, &bad, sizeof(bad));
  m.msg_iovlen = 1;
  Put(buf_, &m, sizeof(m));
  EXPECT_EQ(Call(nr::sendmsg, a, buf_, 0).error(), kEFAULT);
}

TEST_F(SocketSyscallsTest, RightsAreInstalledWithCloexec) {
  int a, b;
  MakePair(SOCK_DGRAM, &a, &b);
  // Send a's own descriptor twice.
  alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(2 * sizeof(int))] = {};
  cmsghdr* c = reinterpret_cast<cmsghdr*>(ctl);
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  int fds[2] = {a, a};
  memcpy(CMSG_DATA(c), fds, sizeof(fds));
  Put(buf_ + 512, ctl, sizeof(ctl));
  Put(buf_ + 2048, "x", 1);
  iovec iov = {reinterpret_cast<void*>(buf_ + 2048), 1};
  Put(buf_ + 1024, &iov, sizeof(iov));
  msghdr m = {nullptr,
              0,
              reinterpret_cast<iovec*>(buf_ + 1024),
              1,
              reinterpret_cast<void*>(buf_ + 512),
              sizeof(ctl),
              0};
  Put(buf_, &m, sizeof(m));
  ASSERT_EQ(Call(nr::sendmsg, a, buf_, 0).value(), 1u);
  // A bad descriptor: EBADF.
  fds[1] = 999;
  memcpy(CMSG_DATA(c), fds, sizeof(fds));
  Put(buf_ + 512, ctl, sizeof(ctl));
  EXPECT_EQ(Call(nr::sendmsg, a, buf_, 0).error(), kEBADF);

  uint8_t zero[64] = {};
  Put(buf_ + 512, zero, sizeof(zero));
  m.msg_controllen = 64;
  Put(buf_, &m, sizeof(m));
  ASSERT_EQ(Call(nr::recvmsg, b, buf_, MSG_CMSG_CLOEXEC).value(), 1u);
  msghdr out = Get<msghdr>(buf_);
  EXPECT_EQ(out.msg_flags, MSG_CMSG_CLOEXEC);
  EXPECT_EQ(out.msg_controllen, CMSG_SPACE(2 * sizeof(int)));
  cmsghdr h = Get<cmsghdr>(buf_ + 512);
  EXPECT_EQ(h.cmsg_len, CMSG_LEN(2 * sizeof(int)));
  EXPECT_EQ(h.cmsg_type, SCM_RIGHTS);
  int32_t n0 = Get<int32_t>(buf_ + 512 + 16),
          n1 = Get<int32_t>(buf_ + 520 + 12);
  for (int fd : {n0, n1}) {
    EXPECT_EQ(Call(nr::fcntl, fd, F_GETFD).value(), FD_CLOEXEC);
    EXPECT_EQ(task_->fd_table().Get(fd), task_->fd_table().Get(a));
  }
}

TEST_F(SocketSyscallsTest, ReadWriteAreMessages) {
  int a, b;
  MakePair(SOCK_DGRAM, &a, &b);
  Put(buf_, "abcdef", 6);
  iovec iov[2] = {{reinterpret_cast<void*>(buf_), 2},
                  {reinterpret_cast<void*>(buf_ + 2), 4}};
  Put(buf_ + 1024, iov, sizeof(iov));
  EXPECT_EQ(Call(nr::writev, a, buf_ + 1024, 2).value(), 6u);
  EXPECT_EQ(Call(nr::write, a, buf_, 0).value(), 0u);  // an empty datagram
  EXPECT_EQ(Call(nr::read, b, buf_ + 2048, 0).value(), 0u);  // takes none
  EXPECT_EQ(Call(nr::read, b, buf_ + 2048, 100).value(), 6u);
  EXPECT_EQ(Call(nr::read, b, buf_ + 2048, 100).value(), 0u);
  EXPECT_EQ(Call(nr::read, b, buf_ + 2048, 100).error(), kEAGAIN);
  // EPIPE on a datagram socket: the errno, no signal needed.
  ASSERT_TRUE(Call(nr::shutdown, a, SHUT_WR).ok());
  EXPECT_EQ(Call(nr::write, a, buf_, 1).error(), kEPIPE);
  EXPECT_EQ(Call(nr::shutdown, a, 3).error(), kEINVAL);
}

TEST_F(SocketSyscallsTest, NamesListenAcceptAndOptions) {
  auto s = Call(nr::socket, AF_UNIX, SOCK_STREAM, 0);
  ASSERT_TRUE(s.ok());
  int fd = s.value();
  // getsockname truncates to the guest's length and stores the real one.
  int32_t len = 4;
  Put(buf_ + 100, &len, 4);
  ASSERT_TRUE(Call(nr::getsockname, fd, buf_, buf_ + 100).ok());
  EXPECT_EQ(Get<int32_t>(buf_ + 100), 13);
  EXPECT_EQ(Get<uint8_t>(buf_ + 2), '/');
  len = -1;
  Put(buf_ + 100, &len, 4);
  EXPECT_EQ(Call(nr::getsockname, fd, buf_, buf_ + 100).error(), kEINVAL);
  EXPECT_EQ(Call(nr::getpeername, fd, buf_, buf_ + 100).error(), kEOPNOTSUPP);
  // listen: a negative backlog is somaxconn.
  ASSERT_TRUE(Call(nr::listen, fd, static_cast<uint64_t>(-1)).ok());
  auto* sock =
      static_cast<FakeSocket*>(net::AsSocket(task_->fd_table().Get(fd)));
  EXPECT_EQ(sock->last_backlog, 4096);
  int32_t one = 1;
  len = 4;
  Put(buf_ + 100, &len, 4);
  ASSERT_TRUE(
      Call(nr::getsockopt, fd, SOL_SOCKET, SO_ACCEPTCONN, buf_, buf_ + 100)
          .ok());
  EXPECT_EQ(Get<int32_t>(buf_), 1);
  // accept4: flags, the peer name, the new descriptor's flags.
  EXPECT_EQ(Call(nr::accept4, fd, 0, 0, 0x1).error(), kEINVAL);
  len = 64;
  Put(buf_ + 100, &len, 4);
  auto nfd =
      Call(nr::accept4, fd, buf_, buf_ + 100, SOCK_NONBLOCK | SOCK_CLOEXEC);
  ASSERT_TRUE(nfd.ok());
  EXPECT_EQ(Get<int32_t>(buf_ + 100), 16);
  EXPECT_EQ(Call(nr::fcntl, nfd.value(), F_GETFD).value(), FD_CLOEXEC);
  EXPECT_EQ(Call(nr::fcntl, nfd.value(), F_GETFL).value(),
            uint64_t{O_RDWR | O_NONBLOCK});
  // setsockopt through the base.
  Put(buf_, &one, 4);
  ASSERT_TRUE(Call(nr::setsockopt, fd, SOL_SOCKET, SO_KEEPALIVE, buf_, 4).ok());
  EXPECT_EQ(Call(nr::setsockopt, fd, SOL_SOCKET, SO_KEEPALIVE, buf_,
                 static_cast<uint64_t>(-1))
                .error(),
            kEINVAL);
  // A bad value pointer with room for an int: EFAULT.
  EXPECT_EQ(Call(nr::setsockopt, fd, SOL_SOCKET, SO_KEEPALIVE, buf_ + 4096, 4)
                .error(),
            kEFAULT);
  // getsockopt of another level with a bad length: the family's EOPNOTSUPP.
  EXPECT_EQ(Call(nr::getsockopt, fd, 0, 1, buf_, buf_ + 4096).error(),
            kEOPNOTSUPP);
  EXPECT_EQ(
      Call(nr::getsockopt, fd, SOL_SOCKET, SO_TYPE, buf_, buf_ + 4096).error(),
      kEFAULT);
}

TEST_F(SocketSyscallsTest, MmsgCounts) {
  int a, b;
  MakePair(SOCK_DGRAM, &a, &b);
  Put(buf_ + 2048, "xyz", 3);
  iovec iov = {reinterpret_cast<void*>(buf_ + 2048), 3};
  Put(buf_ + 1024, &iov, sizeof(iov));
  mmsghdr mm[3] = {};
  for (auto& e : mm) {
    e.msg_hdr.msg_iov = reinterpret_cast<iovec*>(buf_ + 1024);
    e.msg_hdr.msg_iovlen = 1;
  }
  mm[2].msg_hdr.msg_iov = reinterpret_cast<iovec*>(buf_ + 4096);  // bad
  Put(buf_, mm, sizeof(mm));
  EXPECT_EQ(Call(nr::sendmmsg, a, buf_, 3, 0).value(), 2u);
  EXPECT_EQ(Get<uint32_t>(buf_ + sizeof(msghdr)), 3u);
  Put(buf_, mm, sizeof(mm));
  // Two queued: the third entry's bad iovec ends the batch after them
  // and is kept as SO_ERROR, which the next call returns (do_recvmmsg).
  EXPECT_EQ(Call(nr::recvmmsg, b, buf_, 3, 0, 0).value(), 2u);
  EXPECT_EQ(Call(nr::recvmmsg, b, buf_, 3, 0, 0).error(), kEFAULT);
  // An EAGAIN after some is not kept.
  ASSERT_EQ(Call(nr::sendmmsg, a, buf_, 1, 0).value(), 1u);
  EXPECT_EQ(Call(nr::recvmmsg, b, buf_, 2, 0, 0).value(), 1u);
  EXPECT_EQ(Call(nr::recvmmsg, b, buf_, 2, 0, 0).error(), kEAGAIN);
  EXPECT_EQ(Call(nr::sendmsg, a, buf_, 0x80000000u).error(), kEINVAL);
}

}  // namespace
}  // namespace sandbox::syscalls
