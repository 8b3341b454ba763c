// Handlers run through the table against a real MemoryManager on a fake
// platform (no guest code runs).
#include "sentry/abi/syscalls.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/fs/host/host_file.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/signal_frame.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"
#include "sentry/syscalls/table.h"
#include "sentry/vfs/lock/file_locks.h"

namespace sandbox::syscalls {
namespace {

namespace nr = abi::nr;

class SyscallsTest : public ::testing::Test {
 protected:
  void SetUp() override { Init(kernel::Credentials::Root()); }

  void Init(kernel::Credentials creds) {
    // A second Init drops the first kernel and file system before their
    // memory file.
    kernel_.reset();
    ns_.reset();
    table_ = SyscallTable::CreateLinux64();
    table_->SetStraceOptions({.log_calls = false, .count = true});
    kernel_ = std::make_unique<kernel::Kernel>(&platform_, *table_,
                                               kernel::KernelOptions{});
    auto mm = mm::MemoryManager::Create(platform_, {.randomize = false});
    ASSERT_TRUE(mm.ok());
    // A tmpfs root (mode 0755) as the task's root and cwd.
    auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
    ASSERT_TRUE(mf.ok());
    mf_ = std::move(mf).value();
    ns_ = vfs::MountNamespace::Create(
        fs::tmpfs::Filesystem::Create(*mf_, {.root_mode = 0755}), 0);
    kernel::NewProcessArgs args;
    args.exe_path = "/bin/guest";
    args.creds = std::move(creds);
    args.fs = std::make_shared<vfs::FsContext>(ns_->Root(), ns_->Root());
    args.mm = std::move(mm).value();
    auto task = kernel_->NewProcess(std::move(args));
    ASSERT_TRUE(task.ok());
    task_ = task.value();
    // A scratch page for arguments.
    auto a = Call(nr::mmap, 0, 4 * 4096, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, static_cast<uint64_t>(-1), 0);
    ASSERT_TRUE(a.ok());
    buf_ = a.value();
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
  void PutString(uint64_t addr, const std::string& s) {
    Put(addr, s.c_str(), s.size() + 1);
  }
  template <typename T>
  T Get(uint64_t addr) {
    T v{};
    EXPECT_TRUE(task_->CopyInFull(addr, &v, sizeof(T)).ok());
    return v;
  }

  // Installs a pipe's ends as guest fds; returns the host ends kept.
  void InstallPipe(int read_fd_guest, int write_fd_guest, int* host_read,
                   int* host_write) {
    int p[2], q[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_EQ(pipe(q), 0);
    // Guest reads from p[0] (test writes p[1]); guest writes q[1] (test
    // reads q[0]).
    auto r = fs::host::HostFile::Create(p[0]);
    auto w = fs::host::HostFile::Create(q[1]);
    ASSERT_TRUE(r.ok() && w.ok());
    ASSERT_TRUE(task_->fd_table()
                    .InstallAt(read_fd_guest, r.value(), false, 1024)
                    .ok());
    ASSERT_TRUE(task_->fd_table()
                    .InstallAt(write_fd_guest, w.value(), false, 1024)
                    .ok());
    *host_write = p[1];
    *host_read = q[0];
  }

  static uint64_t Neg(Errno e) { return static_cast<uint64_t>(-e.number()); }

  mm::testing::FakePlatform platform_;
  std::unique_ptr<platform::MemoryFile> mf_;  // outlives the file system
  std::shared_ptr<vfs::MountNamespace> ns_;
  std::unique_ptr<SyscallTable> table_;
  std::unique_ptr<kernel::Kernel> kernel_;
  kernel::Task* task_ = nullptr;
  uint64_t buf_ = 0;
};

TEST_F(SyscallsTest, Ids) {
  EXPECT_EQ(Call(nr::getpid).value(), 1u);
  EXPECT_EQ(Call(nr::gettid).value(), 1u);
  EXPECT_EQ(Call(nr::getppid).value(), 0u);
  EXPECT_EQ(Call(nr::getuid).value(), 0u);
  EXPECT_EQ(Call(nr::getegid).value(), 0u);
  EXPECT_EQ(Call(nr::set_tid_address, buf_).value(), 1u);
  EXPECT_EQ(task_->clear_child_tid(), buf_);
  EXPECT_EQ(Call(nr::set_robust_list, buf_, 24).value(), 0u);
  EXPECT_EQ(Call(nr::set_robust_list, buf_, 23).error(), kEINVAL);
  ASSERT_TRUE(Call(nr::getresuid, buf_, buf_ + 4, buf_ + 8).ok());
  EXPECT_EQ(Call(nr::getresuid, buf_, 8, buf_ + 8).error(), kEFAULT);
  EXPECT_EQ(Call(nr::getgroups, 0, 0).value(), 0u);
}

TEST_F(SyscallsTest, UnknownAndUnsupported) {
  EXPECT_EQ(Call(nr::rseq, buf_, 32, 0, 0).error(), kENOSYS);
  EXPECT_EQ(Call(nr::kexec_file_load).error(), kENOSYS);
  EXPECT_EQ(Call(400).error(), kENOSYS);
  EXPECT_EQ(Call(100000).error(), kENOSYS);
  EXPECT_EQ(table_->Lookup(nr::kexec_file_load), nullptr);
  ASSERT_NE(table_->Lookup(nr::rseq), nullptr);
  EXPECT_EQ(table_->Lookup(nr::rseq)->support, Support::kUnsupported);
  EXPECT_EQ(table_->Lookup(nr::read)->support, Support::kFull);
  EXPECT_EQ(table_->CallCount(nr::rseq), 1u);
  std::string s = table_->Summary();
  EXPECT_NE(s.find("rseq"), std::string::npos) << s;
  EXPECT_NE(s.find("(out of range)"), std::string::npos) << s;
}

TEST_F(SyscallsTest, WriteReadThroughHostPipes) {
  int host_read, host_write;
  InstallPipe(0, 1, &host_read, &host_write);
  PutString(buf_, "hello");
  EXPECT_EQ(Call(nr::write, 1, buf_, 5).value(), 5u);
  char out[16] = {};
  ASSERT_EQ(read(host_read, out, sizeof(out)), 5);
  EXPECT_STREQ(out, "hello");
  // A bad pointer is EFAULT and writes nothing.
  EXPECT_EQ(Call(nr::write, 1, 8, 5).error(), kEFAULT);
  EXPECT_EQ(Call(nr::write, 1, 0xffffffffffff0000, 5).error(), kEFAULT);
  EXPECT_EQ(Call(nr::write, 0, buf_, 5).error(), kEBADF);  // Read end.
  EXPECT_EQ(Call(nr::write, 7, buf_, 5).error(), kEBADF);
  EXPECT_EQ(Call(nr::write, 1, buf_, 0).value(), 0u);

  ASSERT_EQ(write(host_write, "abc", 3), 3);
  EXPECT_EQ(Call(nr::read, 0, buf_ + 100, 10).value(), 3u);
  EXPECT_EQ(Get<char>(buf_ + 102), 'c');
  ASSERT_EQ(write(host_write, "d", 1), 1);
  EXPECT_EQ(Call(nr::read, 0, 16, 10).error(), kEFAULT);

  // writev gathers.
  abi::Iovec iov[2] = {{buf_, 2}, {buf_ + 3, 2}};
  Put(buf_ + 200, iov, sizeof(iov));
  EXPECT_EQ(Call(nr::writev, 1, buf_ + 200, 2).value(), 4u);
  ASSERT_EQ(read(host_read, out, sizeof(out)), 4);
  EXPECT_EQ(std::string(out, 4), "helo");
  EXPECT_EQ(Call(nr::writev, 1, buf_ + 200, -1).error(), kEINVAL);
  EXPECT_EQ(Call(nr::writev, 1, buf_ + 200, 1025).error(), kEINVAL);
  EXPECT_EQ(Call(nr::writev, 1, 8, 1).error(), kEFAULT);
  EXPECT_EQ(Call(nr::pwrite64, 1, buf_, 1, 0).error(), kESPIPE);
  EXPECT_EQ(Call(nr::pread64, 0, buf_, 1, -1).error(), kEINVAL);
  EXPECT_EQ(Call(nr::lseek, 0, 0, SEEK_SET).error(), kESPIPE);
  EXPECT_EQ(Call(nr::lseek, 0, 0, 17).error(), kEINVAL);
  close(host_read);
  close(host_write);
}

TEST_F(SyscallsTest, StatAndIoctlAndReadlink) {
  int host_read, host_write;
  InstallPipe(0, 1, &host_read, &host_write);
  ASSERT_TRUE(Call(nr::fstat, 1, buf_).ok());
  EXPECT_TRUE(S_ISFIFO(Get<abi::Stat>(buf_).st_mode));
  EXPECT_EQ(Call(nr::fstat, 9, buf_).error(), kEBADF);
  EXPECT_EQ(Call(nr::fstat, 1, 8).error(), kEFAULT);
  PutString(buf_ + 1000, "");
  ASSERT_TRUE(Call(nr::newfstatat, 1, buf_ + 1000, buf_, AT_EMPTY_PATH).ok());
  EXPECT_EQ(Call(nr::newfstatat, 1, buf_ + 1000, buf_, 0).error(), kENOENT);
  EXPECT_EQ(Call(nr::newfstatat, 1, buf_ + 1000, buf_, 0x40000).error(),
            kEINVAL);
  PutString(buf_ + 1000, "/etc/passwd");
  EXPECT_EQ(Call(nr::newfstatat, AT_FDCWD, buf_ + 1000, buf_, 0).error(),
            kENOENT);
  PutString(buf_ + 1000, "/");
  ASSERT_TRUE(Call(nr::newfstatat, AT_FDCWD, buf_ + 1000, buf_, 0).ok());
  EXPECT_TRUE(S_ISDIR(Get<abi::Stat>(buf_).st_mode));
  EXPECT_EQ(Call(nr::ioctl, 1, 0x5401 /* TCGETS */, buf_).error(), kENOTTY);
  EXPECT_EQ(Call(nr::ioctl, 1, 0x5451 /* FIOCLEX */, 0).value(), 0u);
  EXPECT_EQ(Call(nr::fcntl, 1, F_GETFD).value(), uint64_t{FD_CLOEXEC});

  PutString(buf_ + 1000, "/proc/self/exe");
  EXPECT_EQ(Call(nr::readlink, buf_ + 1000, buf_, 100).value(), 10u);
  char link[11] = {};
  ASSERT_TRUE(task_->CopyInFull(buf_, link, 10).ok());
  EXPECT_STREQ(link, "/bin/guest");
  EXPECT_EQ(Call(nr::readlink, buf_ + 1000, buf_, 4).value(), 4u);
  EXPECT_EQ(Call(nr::readlink, buf_ + 1000, buf_, 0).error(), kEINVAL);
  PutString(buf_ + 1000, "/proc/1/exe");
  EXPECT_EQ(Call(nr::readlinkat, AT_FDCWD, buf_ + 1000, buf_, 100).value(),
            10u);
  PutString(buf_ + 1000, "/proc/2/exe");
  EXPECT_EQ(Call(nr::readlink, buf_ + 1000, buf_, 100).error(), kENOENT);
  EXPECT_EQ(Call(nr::readlink, 8, buf_, 100).error(), kEFAULT);
  EXPECT_EQ(Call(nr::getcwd, buf_, 100).value(), 2u);
  EXPECT_EQ(Get<char>(buf_), '/');
  EXPECT_EQ(Call(nr::getcwd, buf_, 1).error(), kERANGE);
  close(host_read);
  close(host_write);
}

TEST_F(SyscallsTest, FilesOnTheTmpfsRoot) {
  // Paths at buf_ + 2000.., data at buf_ + 3000.
  const uint64_t p1 = buf_ + 2000, p2 = buf_ + 2200, data = buf_ + 3000;
  PutString(p1, "/dir");
  ASSERT_TRUE(Call(nr::mkdir, p1, 0755).ok());
  EXPECT_EQ(Call(nr::mkdir, p1, 0755).error(), kEEXIST);
  ASSERT_TRUE(Call(nr::chdir, p1).ok());
  ASSERT_EQ(Call(nr::getcwd, data, 100).value(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(
                &Get<std::array<char, 5>>(data)[0])),
            "/dir");
  PutString(p1, "f");
  auto fd = Call(nr::openat, AT_FDCWD, p1, O_CREAT | O_RDWR | O_CLOEXEC, 0640);
  ASSERT_TRUE(fd.ok()) << fd.error().name();
  PutString(data, "hello");
  EXPECT_EQ(Call(nr::write, fd.value(), data, 5).value(), 5u);
  EXPECT_EQ(Call(nr::lseek, fd.value(), 1, SEEK_SET).value(), 1u);
  EXPECT_EQ(Call(nr::read, fd.value(), data, 10).value(), 4u);
  EXPECT_EQ(Get<char>(data), 'e');
  EXPECT_EQ(Call(nr::fcntl, fd.value(), F_GETFD).value(), uint64_t{FD_CLOEXEC});
  ASSERT_TRUE(Call(nr::fstat, fd.value(), data).ok());
  EXPECT_EQ(Get<abi::Stat>(data).st_size, 5);
  EXPECT_EQ(Get<abi::Stat>(data).st_mode, S_IFREG | 0640u);
  PutString(p2, "/dir/g");
  ASSERT_TRUE(Call(nr::rename, p1, p2).ok());
  PutString(p1, "/dir/f");
  EXPECT_EQ(Call(nr::stat, p1, data).error(), kENOENT);
  ASSERT_TRUE(Call(nr::stat, p2, data).ok());
  EXPECT_EQ(Get<abi::Stat>(data).st_size, 5);
  // getdents64 of the directory: ".", "..", "g".
  PutString(p1, "/dir");
  auto dfd = Call(nr::open, p1, O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(dfd.ok());
  auto n = Call(nr::getdents64, dfd.value(), data, 512);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 24u + 24u + 24u);
  EXPECT_EQ(Call(nr::getdents64, dfd.value(), data, 512).value(), 0u);
  // Errors: a file as a directory, a bad path pointer, unlink of a dir.
  PutString(p1, "/dir/g/x");
  EXPECT_EQ(Call(nr::open, p1, O_RDONLY).error(), kENOTDIR);
  EXPECT_EQ(Call(nr::open, 8, O_RDONLY).error(), kEFAULT);
  PutString(p1, "/dir");
  EXPECT_EQ(Call(nr::unlink, p1).error(), kEISDIR);
  EXPECT_EQ(Call(nr::rmdir, p1).error(), kENOTEMPTY);
  ASSERT_TRUE(Call(nr::unlink, p2).ok());
  ASSERT_TRUE(Call(nr::close, fd.value()).ok());
  ASSERT_TRUE(Call(nr::close, dfd.value()).ok());
  PutString(p1, "/");
  ASSERT_TRUE(Call(nr::chdir, p1).ok());
  PutString(p1, "/dir");
  ASSERT_TRUE(Call(nr::rmdir, p1).ok());
}

TEST_F(SyscallsTest, DupCloseFcntl) {
  int host_read, host_write;
  InstallPipe(0, 1, &host_read, &host_write);
  EXPECT_EQ(Call(nr::dup, 1).value(), 2u);
  EXPECT_EQ(Call(nr::dup2, 1, 10).value(), 10u);
  EXPECT_EQ(Call(nr::dup2, 10, 10).value(), 10u);
  EXPECT_EQ(Call(nr::dup2, 11, 11).error(), kEBADF);
  EXPECT_EQ(Call(nr::dup3, 1, 1, 0).error(), kEINVAL);
  EXPECT_EQ(Call(nr::dup3, 1, 12, O_CLOEXEC).value(), 12u);
  EXPECT_EQ(Call(nr::dup3, 1, 13, O_NONBLOCK).error(), kEINVAL);
  EXPECT_EQ(Call(nr::fcntl, 12, F_GETFD).value(), uint64_t{FD_CLOEXEC});
  EXPECT_EQ(Call(nr::fcntl, 1, F_DUPFD, 5).value(), 5u);
  EXPECT_EQ(Call(nr::fcntl, 1, F_DUPFD_CLOEXEC, 5).value(), 6u);
  EXPECT_EQ(Call(nr::fcntl, 1, F_DUPFD, 1024).error(), kEINVAL);
  EXPECT_EQ(Call(nr::fcntl, 1, F_GETFL).value(), uint64_t{O_WRONLY});
  EXPECT_EQ(Call(nr::fcntl, 1, F_SETFL, O_NONBLOCK | O_APPEND).value(), 0u);
  // The guest's flag is set; the host description is untouched.
  EXPECT_EQ(Call(nr::fcntl, 2, F_GETFL).value(),
            uint64_t{O_WRONLY | O_NONBLOCK | O_APPEND});
  EXPECT_EQ(Call(nr::close, 1).value(), 0u);
  EXPECT_EQ(Call(nr::close, 1).error(), kEBADF);
  EXPECT_EQ(Call(nr::dup2, 2, 1024).error(), kEBADF);
  close(host_read);
  close(host_write);
}

TEST_F(SyscallsTest, Limits) {
  ASSERT_TRUE(Call(nr::prlimit64, 0, RLIMIT_NOFILE, 0, buf_).ok());
  auto l = Get<abi::Rlimit64>(buf_);
  EXPECT_EQ(l.rlim_cur, 1024u);
  EXPECT_EQ(l.rlim_max, 4096u);
  EXPECT_EQ(Call(nr::prlimit64, 0, 99, 0, buf_).error(), kEINVAL);
  EXPECT_EQ(Call(nr::prlimit64, 42, RLIMIT_NOFILE, 0, buf_).error(), kESRCH);
  Put(buf_, &(const abi::Rlimit64&)abi::Rlimit64{3, 3}, 16);
  ASSERT_TRUE(Call(nr::prlimit64, 1, RLIMIT_NOFILE, buf_, buf_ + 16).ok());
  EXPECT_EQ(Get<abi::Rlimit64>(buf_ + 16).rlim_cur, 1024u);
  // With a limit of 3, fd 3 cannot be made.
  int host_read, host_write;
  InstallPipe(0, 1, &host_read, &host_write);
  EXPECT_EQ(Call(nr::dup, 1).value(), 2u);
  EXPECT_EQ(Call(nr::dup, 1).error(), kEMFILE);
  Put(buf_, &(const abi::Rlimit64&)abi::Rlimit64{5, 4}, 16);
  EXPECT_EQ(Call(nr::prlimit64, 0, RLIMIT_NOFILE, buf_, 0).error(), kEINVAL);
  close(host_read);
  close(host_write);
}

TEST_F(SyscallsTest, RaisingHardLimitNeedsCapability) {
  Init(kernel::Credentials::User(1000, 1000, {5, 3}));
  EXPECT_EQ(Call(nr::getuid).value(), 1000u);
  EXPECT_EQ(Call(nr::getgroups, 2, buf_).value(), 2u);
  EXPECT_EQ(Get<uint32_t>(buf_), 3u);
  EXPECT_EQ(Call(nr::getgroups, 1, buf_).error(), kEINVAL);
  Put(buf_, &(const abi::Rlimit64&)abi::Rlimit64{1024, 8192}, 16);
  EXPECT_EQ(Call(nr::prlimit64, 0, RLIMIT_NOFILE, buf_, 0).error(), kEPERM);
}

TEST_F(SyscallsTest, UnameSysinfoTime) {
  ASSERT_TRUE(Call(nr::uname, buf_).ok());
  auto u = Get<abi::Utsname>(buf_);
  EXPECT_STREQ(u.sysname, "Linux");
  EXPECT_STREQ(u.machine, "x86_64");
  EXPECT_EQ(Call(nr::uname, 0).error(), kEFAULT);
  ASSERT_TRUE(Call(nr::sysinfo, buf_).ok());
  EXPECT_EQ(Get<abi::Sysinfo>(buf_).procs, 1);
  EXPECT_EQ(Get<abi::Sysinfo>(buf_).mem_unit, 1u);
  ASSERT_TRUE(Call(nr::clock_gettime, CLOCK_MONOTONIC, buf_).ok());
  EXPECT_EQ(Call(nr::clock_gettime, 77, buf_).error(), kEINVAL);
  EXPECT_EQ(Call(nr::clock_gettime, CLOCK_REALTIME, 8).error(), kEFAULT);
  ASSERT_TRUE(Call(nr::gettimeofday, buf_, buf_ + 16).ok());
  EXPECT_GT(Get<abi::Timeval>(buf_).tv_sec, 1600000000);
  EXPECT_GT(Call(nr::time, 0).value(), 1600000000u);
  Put(buf_, &(const abi::Timespec&)abi::Timespec{0, 1000}, 16);
  EXPECT_EQ(Call(nr::nanosleep, buf_, 0).value(), 0u);
  Put(buf_, &(const abi::Timespec&)abi::Timespec{0, 1000000000}, 16);
  EXPECT_EQ(Call(nr::nanosleep, buf_, 0).error(), kEINVAL);
  // A practically infinite sleep does not overflow into "already past":
  // it sleeps until interrupted.
  Put(buf_, &(const abi::Timespec&)abi::Timespec{INT64_MAX, 999999999}, 16);
  std::thread interrupter([&] {
    usleep(20000);
    task_->Interrupt();
  });
  EXPECT_EQ(Call(nr::nanosleep, buf_, buf_ + 32).error(),
            kERestartRestartBlock);
  interrupter.join();
  EXPECT_GT(Get<abi::Timespec>(buf_ + 32).tv_sec, 1000000000);
}

TEST_F(SyscallsTest, Signals) {
  abi::KernelSigaction act = {.handler = 1 /* SIG_IGN */, .mask = ~uint64_t{0}};
  Put(buf_, &act, sizeof(act));
  EXPECT_EQ(Call(nr::rt_sigaction, SIGINT, buf_, buf_ + 64, 7).error(),
            kEINVAL);
  EXPECT_EQ(Call(nr::rt_sigaction, SIGKILL, buf_, 0, 8).error(), kEINVAL);
  EXPECT_EQ(Call(nr::rt_sigaction, 65, buf_, 0, 8).error(), kEINVAL);
  EXPECT_EQ(Call(nr::rt_sigaction, SIGINT, buf_, buf_ + 64, 8).value(), 0u);
  EXPECT_EQ(Get<abi::KernelSigaction>(buf_ + 64).handler, 0u);
  EXPECT_EQ(task_->thread_group().GetAction(SIGINT).handler, 1u);
  // SIGKILL and SIGSTOP are never in a mask.
  EXPECT_EQ(task_->thread_group().GetAction(SIGINT).mask & (1u << 8), 0u);
  EXPECT_EQ(Call(nr::rt_sigaction, SIGKILL, 0, buf_ + 64, 8).value(), 0u);

  uint64_t set = ~uint64_t{0};
  Put(buf_, &set, 8);
  EXPECT_EQ(Call(nr::rt_sigprocmask, SIG_BLOCK, buf_, 0, 8).value(), 0u);
  EXPECT_EQ(task_->signal_mask(),
            ~((uint64_t{1} << (SIGKILL - 1)) | (uint64_t{1} << (SIGSTOP - 1))));
  EXPECT_EQ(Call(nr::rt_sigprocmask, 7, buf_, 0, 8).error(), kEINVAL);
  EXPECT_EQ(Call(nr::rt_sigprocmask, 7, 0, buf_ + 8, 8).value(), 0u);
  EXPECT_EQ(Call(nr::rt_sigprocmask, SIG_SETMASK, buf_, 0, 4).error(), kEINVAL);
}

TEST_F(SyscallsTest, ArchPrctlAndRandom) {
  EXPECT_EQ(Call(nr::arch_prctl, 0x1002, 0x12345000).value(), 0u);
  EXPECT_EQ(task_->cpu().regs.fs_base, 0x12345000u);
  EXPECT_EQ(Call(nr::arch_prctl, 0x1003, buf_).value(), 0u);
  EXPECT_EQ(Get<uint64_t>(buf_), 0x12345000u);
  EXPECT_EQ(Call(nr::arch_prctl, 0x1002, 0x800000000000).error(), kEPERM);
  EXPECT_EQ(Call(nr::arch_prctl, 0x9999, 0).error(), kEINVAL);
  EXPECT_EQ(Call(nr::getrandom, buf_, 16, 0).value(), 16u);
  EXPECT_EQ(Call(nr::getrandom, buf_, 16, 6).error(), kEINVAL);
  EXPECT_EQ(Call(nr::getrandom, buf_, 16, 8).error(), kEINVAL);
  EXPECT_EQ(Call(nr::getrandom, 8, 16, 0).error(), kEFAULT);
}

TEST_F(SyscallsTest, Memory) {
  task_->mm().SetBrkStart(0x600000);
  uint64_t brk0 = Call(nr::brk, 0).value();
  EXPECT_EQ(brk0, 0x600000u);
  EXPECT_EQ(Call(nr::brk, brk0 + 8192).value(), brk0 + 8192);
  auto m = Call(nr::mmap, 0, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
                static_cast<uint64_t>(-1), 0);
  ASSERT_TRUE(m.ok());
  // Read-only: a copy-out (the kernel writing for the guest) fails.
  EXPECT_EQ(Call(nr::clock_gettime, CLOCK_REALTIME, m.value()).error(),
            kEFAULT);
  EXPECT_EQ(Call(nr::mprotect, m.value(), 8192, PROT_READ | PROT_WRITE).value(),
            0u);
  EXPECT_EQ(Call(nr::clock_gettime, CLOCK_REALTIME, m.value()).value(), 0u);
  EXPECT_EQ(Call(nr::munmap, m.value(), 8192).value(), 0u);
  EXPECT_EQ(Call(nr::clock_gettime, CLOCK_REALTIME, m.value()).error(),
            kEFAULT);
  EXPECT_EQ(Call(nr::mmap, 0, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
                 static_cast<uint64_t>(-1), 0)
                .error(),
            kEINVAL);
  // madvise/mremap go to the mm.
  auto m2 = Call(nr::mmap, 0, 8192, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, static_cast<uint64_t>(-1), 0);
  ASSERT_TRUE(m2.ok());
  uint32_t v = 42;
  Put(m2.value(), &v, 4);
  EXPECT_EQ(Call(nr::madvise, m2.value(), 8192, MADV_DONTNEED).value(), 0u);
  EXPECT_EQ(Get<uint32_t>(m2.value()), 0u);
  EXPECT_EQ(Call(nr::madvise, m2.value() + 1, 8192, MADV_DONTNEED).error(),
            kEINVAL);
  Put(m2.value(), &v, 4);
  auto moved = Call(nr::mremap, m2.value(), 8192, 1 << 20, MREMAP_MAYMOVE, 0);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(Get<uint32_t>(moved.value()), 42u);
  EXPECT_EQ(Call(nr::mremap, moved.value(), 4096, 8192, 0xff, 0).error(),
            kEINVAL);
  // A file mapping of a missing FD.
  EXPECT_EQ(Call(nr::mmap, 0, 4096, PROT_READ, MAP_PRIVATE, 55, 0).error(),
            kEBADF);
}

TEST_F(SyscallsTest, ExitGroupAndExit) {
  EXPECT_FALSE(task_->thread_group().exiting());
  EXPECT_EQ(Call(nr::exit_group, 300).value(), 0u);
  EXPECT_TRUE(task_->thread_group().exiting());
  auto st = task_->thread_group().exit_status();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->ShellStatus(), 300 & 0xff);
  EXPECT_EQ(kernel::ExitStatus::Killed(SIGSEGV).ShellStatus(), 139);
  EXPECT_EQ(kernel::ExitStatus::Killed(SIGSEGV, true).WaitStatus(), 0x8b);
  EXPECT_EQ(kernel::ExitStatus::Exited(3).WaitStatus(), 0x300);
}

TEST_F(SyscallsTest, Futex) {
  constexpr int kWait = 0, kWake = 1, kPrivate = 128, kWaitBitset = 9;
  uint32_t word = 5;
  Put(buf_, &word, 4);
  EXPECT_EQ(Call(nr::futex, buf_, kWake | kPrivate, INT32_MAX).value(), 0u);
  EXPECT_EQ(Call(nr::futex, buf_, kWait | kPrivate, 4, 0).error(), kEAGAIN);
  EXPECT_EQ(Call(nr::futex, buf_ + 1, kWait, 5, 0).error(), kEINVAL);
  EXPECT_EQ(Call(nr::futex, 8, kWait, 5, 0).error(), kEFAULT);
  EXPECT_EQ(Call(nr::futex, buf_, 99, 5, 0).error(), kENOSYS);
  abi::Timespec ts{0, 1000000};
  Put(buf_ + 64, &ts, sizeof(ts));
  EXPECT_EQ(Call(nr::futex, buf_, kWait | kPrivate, 5, buf_ + 64).error(),
            kETIMEDOUT);
  EXPECT_EQ(Call(nr::futex, buf_, kWaitBitset, 5, 0, 0, 0).error(), kEINVAL);

  // A wake from another thread ends the wait.
  kernel::FutexManager& f = kernel_->futexes();
  std::thread waker([&] {
    while (f.WaiterCount() == 0) usleep(1000);
    EXPECT_EQ(f.Wake(*task_, buf_, /*shared=*/false, ~0u, 1).value(), 1u);
  });
  EXPECT_EQ(Call(nr::futex, buf_, kWait | kPrivate, 5, 0).value(), 0u);
  waker.join();

  // An interrupt (signal, kill) ends it with ERESTARTSYS.
  std::thread interrupter([&] {
    while (f.WaiterCount() == 0) usleep(1000);
    task_->Interrupt();
  });
  EXPECT_EQ(Call(nr::futex, buf_, kWait | kPrivate, 5, 0).error(),
            kERestartSys);
  interrupter.join();
  EXPECT_EQ(f.WaiterCount(), 0u);
}

TEST_F(SyscallsTest, MemfdMmapSealsMsyncMincore) {
  PutString(buf_ + 1000, "guest");
  auto fd = Call(nr::memfd_create, buf_ + 1000, MFD_ALLOW_SEALING);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(Call(nr::memfd_create, 8, 0).error(), kEFAULT);
  EXPECT_EQ(Call(nr::memfd_create, buf_ + 1000, 0x100).error(), kEINVAL);
  EXPECT_EQ(Call(nr::memfd_create, buf_ + 1000, MFD_HUGETLB).error(), kEINVAL);
  ASSERT_TRUE(Call(nr::ftruncate, *fd, 2 * 4096).ok());
  auto a =
      Call(nr::mmap, 0, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  ASSERT_TRUE(a.ok());
  std::string name;
  for (const mm::VmaInfo& v : task_->mm().Vmas()) {
    if (v.start == *a) name = v.name;
  }
  EXPECT_EQ(name, "/memfd:guest (deleted)");
  // A store through the mapping is what pread returns.
  Put(*a + 4096, "hi", 2);
  ASSERT_EQ(Call(nr::pread64, *fd, buf_ + 2000, 2, 4096).value(), 2u);
  EXPECT_EQ(Get<char>(buf_ + 2001), 'i');
  // mincore: the touched page is resident.
  ASSERT_TRUE(Call(nr::mincore, *a, 2 * 4096, buf_ + 3000).ok());
  EXPECT_EQ(Get<uint8_t>(buf_ + 3001), 1);
  EXPECT_EQ(Call(nr::mincore, *a + 1, 4096, buf_ + 3000).error(), kEINVAL);
  EXPECT_EQ(Call(nr::msync, *a, 4096, MS_SYNC).value(), 0u);
  EXPECT_EQ(Call(nr::msync, *a, 4096, MS_SYNC | MS_ASYNC).error(), kEINVAL);
  // F_SEAL_WRITE waits for the shared writable mapping to go.
  EXPECT_EQ(Call(nr::fcntl, *fd, F_ADD_SEALS, F_SEAL_WRITE).error(), kEBUSY);
  ASSERT_TRUE(Call(nr::munmap, *a, 2 * 4096).ok());
  ASSERT_TRUE(Call(nr::fcntl, *fd, F_ADD_SEALS, F_SEAL_WRITE).ok());
  EXPECT_EQ(Call(nr::fcntl, *fd, F_GET_SEALS).value(), uint64_t{F_SEAL_WRITE});
  EXPECT_EQ(Call(nr::mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0)
                .error(),
            kEPERM);
  EXPECT_EQ(Call(nr::write, *fd, buf_, 1).error(), kEPERM);
  // Unknown seal bits.
  EXPECT_EQ(Call(nr::fcntl, *fd, F_ADD_SEALS, 0x40).error(), kEINVAL);
}

TEST_F(SyscallsTest, KillSelf) {
  // The test's task is the sandbox's init, which ignores fatal default
  // actions (kernel/jobctl_test.cc): here it plays an ordinary process.
  task_->thread_group().set_unkillable(false);
  EXPECT_EQ(Call(nr::kill, 2, SIGTERM).error(), kESRCH);
  EXPECT_EQ(Call(nr::kill, 1, 0).value(), 0u);
  EXPECT_EQ(Call(nr::kill, 1, 99).error(), kEINVAL);
  EXPECT_EQ(Call(nr::tgkill, 1, 2, SIGABRT).error(), kESRCH);
  EXPECT_EQ(Call(nr::tgkill, 0, 1, SIGABRT).error(), kEINVAL);
  EXPECT_EQ(Call(nr::kill, 1, SIGCHLD).value(), 0u);  // Ignored by default.
  EXPECT_FALSE(task_->thread_group().exiting());
  // A core-dumping signal is pending until the run loop delivers it.
  EXPECT_EQ(Call(nr::tgkill, 1, 1, SIGABRT).value(), 0u);
  EXPECT_FALSE(task_->thread_group().exiting());
  kernel::DeliverSignals(*task_);
  EXPECT_TRUE(task_->thread_group().exiting());
  EXPECT_EQ(task_->thread_group().exit_status()->ShellStatus(), 134);
}

// The run loop's signal step on a syscall that returned a restart code:
// handle_signal's and arch_do_signal_or_restart's rules, the frame, and
// rt_sigreturn back to the restarted syscall.
TEST_F(SyscallsTest, SignalRestartRulesAndSigreturn) {
  user_regs_struct& regs = task_->cpu().regs;
  const uint64_t stack_top = buf_ + 4 * 4096 - 64;
  auto arm = [&](Errno restart) {
    regs.rip = 0x1002;  // just past the syscall instruction
    regs.orig_rax = 0;  // read
    regs.rax = Neg(restart);
    regs.rsp = stack_top;
    task_->signals().syscall_restart = restart;
  };
  auto sc_at = [&](uint64_t rsp) {
    return Get<kernel::SigContext>(rsp + 8 +
                                   offsetof(kernel::UContext, uc_mcontext));
  };
  abi::KernelSigaction act = {0x5000, SA_RESTART | kernel::kSaRestorer, 0x6000,
                              0};
  Put(buf_, &act, sizeof(act));
  ASSERT_TRUE(Call(nr::rt_sigaction, SIGUSR1, buf_, 0, 8).ok());

  // ERESTARTSYS + SA_RESTART: the handler runs, then the syscall again.
  arm(kERestartSys);
  ASSERT_TRUE(Call(nr::tgkill, 1, 1, SIGUSR1).ok());
  kernel::DeliverSignals(*task_);
  EXPECT_EQ(regs.rip, 0x5000u);
  EXPECT_EQ(regs.rdi, uint64_t{SIGUSR1});
  EXPECT_EQ(task_->signal_mask(), kernel::SigBit(SIGUSR1));
  kernel::SigContext sc = sc_at(regs.rsp);
  EXPECT_EQ(sc.rip, 0x1000u);
  EXPECT_EQ(sc.rax, 0u);
  EXPECT_EQ(Get<uint64_t>(regs.rsp), 0x6000u);  // return address
  // The handler returns into the restorer, which calls rt_sigreturn.
  regs.rsp += 8;
  regs.rax = 15;
  EXPECT_EQ(Call(nr::rt_sigreturn).value(), 0u);
  EXPECT_EQ(regs.rip, 0x1000u);
  EXPECT_EQ(regs.rsp, stack_top);
  EXPECT_EQ(task_->signal_mask(), 0u);

  // Without SA_RESTART: EINTR.
  act.flags = kernel::kSaRestorer;
  Put(buf_, &act, sizeof(act));
  ASSERT_TRUE(Call(nr::rt_sigaction, SIGUSR1, buf_, 0, 8).ok());
  arm(kERestartSys);
  ASSERT_TRUE(Call(nr::tgkill, 1, 1, SIGUSR1).ok());
  kernel::DeliverSignals(*task_);
  sc = sc_at(regs.rsp);
  EXPECT_EQ(sc.rax, Neg(kEINTR));
  EXPECT_EQ(sc.rip, 0x1002u);
  regs.rsp += 8;
  ASSERT_TRUE(Call(nr::rt_sigreturn).ok());

  // ERESTARTNOINTR restarts even after a handler.
  arm(kERestartNoIntr);
  ASSERT_TRUE(Call(nr::tgkill, 1, 1, SIGUSR1).ok());
  kernel::DeliverSignals(*task_);
  EXPECT_EQ(sc_at(regs.rsp).rip, 0x1000u);
  regs.rsp += 8;
  ASSERT_TRUE(Call(nr::rt_sigreturn).ok());

  // No handler ran: ERESTARTNOHAND restarts, ERESTART_RESTARTBLOCK goes
  // through restart_syscall.
  arm(kERestartNoHand);
  kernel::DeliverSignals(*task_);
  EXPECT_EQ(regs.rip, 0x1000u);
  EXPECT_EQ(regs.rax, 0u);
  arm(kERestartRestartBlock);
  kernel::DeliverSignals(*task_);
  EXPECT_EQ(regs.rip, 0x1000u);
  EXPECT_EQ(regs.rax, uint64_t{nr::restart_syscall});
  EXPECT_EQ(Call(nr::restart_syscall).error(), kEINTR);  // nothing armed

  // A frame that cannot be read back: SIGSEGV, which kills.
  regs.rsp = 0x10;
  EXPECT_EQ(Call(nr::rt_sigreturn).value(), 0u);
  kernel::DeliverSignals(*task_);
  ASSERT_TRUE(task_->thread_group().exiting());
  EXPECT_EQ(task_->thread_group().exit_status()->signo, SIGSEGV);
}

TEST_F(SyscallsTest, ProcessMisc) {
  EXPECT_EQ(Call(nr::umask, 077).value(), 022u);
  EXPECT_EQ(Call(nr::umask, 0).value(), 077u);
  PutString(buf_, "a-long-thread-name-here");
  EXPECT_EQ(Call(nr::prctl, PR_SET_NAME, buf_).value(), 0u);
  EXPECT_EQ(Call(nr::prctl, PR_GET_NAME, buf_ + 100).value(), 0u);
  char name[16];
  ASSERT_TRUE(task_->CopyInFull(buf_ + 100, name, 16).ok());
  EXPECT_STREQ(name, "a-long-thread-n");
  EXPECT_EQ(Call(nr::prctl, PR_SET_DUMPABLE, 2).error(), kEINVAL);
  EXPECT_EQ(Call(nr::prctl, PR_GET_DUMPABLE).value(), 1u);
  EXPECT_EQ(Call(nr::prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).value(), 0u);
  EXPECT_EQ(Call(nr::prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0).value(), 1u);
  EXPECT_EQ(Call(nr::prctl, 9999).error(), kEINVAL);
  EXPECT_EQ(Call(nr::sched_getaffinity, 0, 8, buf_).value(), 8u);
  EXPECT_NE(Get<uint64_t>(buf_), 0u);
  EXPECT_EQ(Call(nr::sched_getaffinity, 0, 4, buf_).error(), kEINVAL);
  EXPECT_EQ(Call(nr::sched_getaffinity, 7, 8, buf_).error(), kESRCH);
  EXPECT_EQ(Call(nr::getpgrp).value(), 1u);
  EXPECT_EQ(Call(nr::getsid, 0).value(), 1u);
  EXPECT_EQ(Call(nr::getpgid, 5).error(), kESRCH);
  EXPECT_EQ(Call(nr::getrusage, 0, buf_).value(), 0u);
  EXPECT_EQ(Call(nr::getrusage, 5, buf_).error(), kEINVAL);
  // sigaltstack: too small, then a good one read back.
  uint64_t ss[3] = {0x1000, 0, 1024};
  Put(buf_, ss, sizeof(ss));
  EXPECT_EQ(Call(nr::sigaltstack, buf_, 0).error(), kENOMEM);
  ss[2] = 65536;
  Put(buf_, ss, sizeof(ss));
  EXPECT_EQ(Call(nr::sigaltstack, buf_, 0).value(), 0u);
  EXPECT_EQ(Call(nr::sigaltstack, 0, buf_ + 64).value(), 0u);
  EXPECT_EQ(Get<uint64_t>(buf_ + 64 + 16), 65536u);
}

TEST_F(SyscallsTest, CloneValidation) {
  EXPECT_EQ(Call(nr::clone, CLONE_THREAD).error(), kEINVAL);
  EXPECT_EQ(Call(nr::clone, CLONE_SIGHAND).error(), kEINVAL);
  EXPECT_EQ(Call(nr::clone, CLONE_NEWNS | CLONE_FS).error(), kEINVAL);
  // Handler tables shared between processes: not supported.
  EXPECT_EQ(Call(nr::clone, CLONE_VM | CLONE_SIGHAND | SIGCHLD).error(),
            kENOSYS);
  EXPECT_EQ(Call(nr::wait4, -1, 0, 0, 0).error(), kECHILD);
  EXPECT_EQ(Call(nr::wait4, -1, 0, 0x1000, 0).error(), kEINVAL);
  // init has no parent in the sandbox to give a sibling.
  EXPECT_EQ(Call(nr::clone, CLONE_PARENT | SIGCHLD).error(), kEINVAL);
  EXPECT_EQ(Call(nr::clone3, buf_, 32).error(), kEINVAL);
  uint64_t args[12] = {};
  args[0] = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
  args[5] = buf_;  // stack without stack_size
  Put(buf_ + 512, args, sizeof(args));
  EXPECT_EQ(Call(nr::clone3, buf_ + 512, 88).error(), kEINVAL);
  args[5] = 0;
  args[11] = 1;  // A nonzero byte beyond the known struct.
  Put(buf_ + 512, args, sizeof(args));
  EXPECT_EQ(Call(nr::clone3, buf_ + 512, 96).error(), kE2BIG);
  EXPECT_EQ(Call(nr::clone3, 8, 88).error(), kEFAULT);
  EXPECT_EQ(kernel_->TaskCount(), 1u);
}

// The kernel side of a round trip: table lookup, argument decoding,
// handler, result. Printed for perf/e2e/README.md; bounded loosely so a
// pathological slowdown fails.
TEST_F(SyscallsTest, DispatchCost) {
  table_->SetStraceOptions({});
  constexpr int kN = 200000;
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < kN; ++i) ASSERT_TRUE(Call(nr::getppid).ok());
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / kN;
  std::printf("dispatch getppid: %.1f ns\n", ns);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(Call(nr::clock_gettime, CLOCK_MONOTONIC, buf_).ok());
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns2 = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / kN;
  std::printf("dispatch clock_gettime (copy-out): %.1f ns\n", ns2);
  EXPECT_LT(ns, 5000);
  EXPECT_LT(ns2, 20000);
}

TEST_F(SyscallsTest, StraceLine) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  kernel::SetLogSinks({.debug_fd = p[1]});
  table_->SetStraceOptions({.log_calls = true, .count = true});
  int host_read, host_write;
  InstallPipe(0, 1, &host_read, &host_write);
  PutString(buf_, "hi\n");
  EXPECT_EQ(Call(nr::write, 1, buf_, 3).value(), 3u);
  EXPECT_EQ(Call(nr::close, 99).error(), kEBADF);
  kernel::SetLogSinks({});
  close(p[1]);
  char out[512] = {};
  ASSERT_GT(read(p[0], out, sizeof(out) - 1), 0);
  std::string s(out);
  // As strace -tt -T: the tid, when the call entered (Unix seconds, to the
  // microsecond), the call, its result, and how long it took.
  EXPECT_TRUE(std::regex_search(
      s, std::regex("\\[    1\\] [0-9]{10}\\.[0-9]{6} write\\(1, \"hi\\\\n\", "
                    "3\\) = 3 <[0-9]+\\.[0-9]{6}>\n")))
      << s;
  EXPECT_NE(s.find("close(99) = -1 EBADF (Bad file descriptor)"),
            std::string::npos)
      << s;
  close(p[0]);
  close(host_read);
  close(host_write);
}

TEST_F(SyscallsTest, PipeFlockAndRecordLocks) {
  ASSERT_TRUE(Call(nr::pipe2, buf_, O_CLOEXEC).ok());
  int32_t r = Get<int32_t>(buf_), w = Get<int32_t>(buf_ + 4);
  PutString(buf_ + 100, "data");
  EXPECT_EQ(Call(nr::write, w, buf_ + 100, 4).value(), 4u);
  // FIONREAD, the pipe size, then the data.
  ASSERT_TRUE(Call(nr::ioctl, r, FIONREAD, buf_ + 200).ok());
  EXPECT_EQ(Get<int32_t>(buf_ + 200), 4);
  EXPECT_EQ(Call(nr::fcntl, w, F_GETPIPE_SZ).value(), 65536u);
  EXPECT_EQ(Call(nr::fcntl, w, F_SETPIPE_SZ, 1).value(), 4096u);
  EXPECT_EQ(Call(nr::read, r, buf_ + 300, 100).value(), 4u);
  EXPECT_EQ(Get<char>(buf_ + 303), 'a');
  // A bad array pointer: EFAULT and no descriptor left behind.
  size_t open_fds = task_->fd_table().Count();
  EXPECT_EQ(Call(nr::pipe2, 8, 0).error(), kEFAULT);
  EXPECT_EQ(task_->fd_table().Count(), open_fds);
  EXPECT_EQ(Call(nr::pipe2, buf_, O_APPEND).error(), kEINVAL);
  // flock: the two ends are two descriptions of one inode.
  EXPECT_TRUE(Call(nr::flock, r, LOCK_EX | LOCK_NB).ok());
  EXPECT_EQ(Call(nr::flock, w, LOCK_EX | LOCK_NB).error(), kEAGAIN);
  EXPECT_EQ(Call(nr::flock, r, 0).error(), kEINVAL);
  // A POSIX lock, dropped when any descriptor of the file closes.
  auto range_locks = [&](int fd) -> size_t {
    vfs::FileRef f = task_->fd_table().Get(fd);
    if (f == nullptr || f->locks() == nullptr) return 0;
    return f->locks()->RangeLocks().size();
  };
  struct flock fl = {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  fl.l_len = 10;
  Put(buf_ + 400, &fl, sizeof(fl));
  EXPECT_TRUE(Call(nr::fcntl, r, F_SETLK, buf_ + 400).ok());
  EXPECT_EQ(Call(nr::fcntl, w, F_SETLK, buf_ + 400).error(), kEBADF);
  ASSERT_EQ(range_locks(r), 1u);
  EXPECT_TRUE(Call(nr::close, w).ok());
  EXPECT_EQ(range_locks(r), 0u);
  EXPECT_EQ(Call(nr::fcntl, r, F_SETLK, 8).error(), kEFAULT);
}

TEST_F(SyscallsTest, PollRestartAndHostFiles) {
  ASSERT_TRUE(Call(nr::pipe2, buf_, 0).ok());
  int32_t r = Get<int32_t>(buf_), w = Get<int32_t>(buf_ + 4);
  pollfd p = {r, POLLIN, 0};
  Put(buf_ + 64, &p, sizeof(p));
  // Interrupted (no signal here): ERESTART_RESTARTBLOCK, and
  // restart_syscall continues the same poll.
  std::thread interrupter([&] {
    usleep(20000);
    task_->Interrupt();
  });
  EXPECT_EQ(Call(nr::poll, buf_ + 64, 1, 10000).error(), kERestartRestartBlock);
  interrupter.join();
  ASSERT_TRUE(task_->signals().restart_fn != nullptr);
  PutString(buf_ + 200, "x");
  ASSERT_EQ(Call(nr::write, w, buf_ + 200, 1).value(), 1u);
  EXPECT_EQ(Call(nr::restart_syscall).value(), 1u);
  EXPECT_EQ(Get<pollfd>(buf_ + 64).revents, POLLIN);
  // select and ppoll give ERESTARTNOHAND; epoll_wait restarts too when no
  // signal is pending.
  EXPECT_EQ(Call(nr::read, r, buf_ + 200, 1).value(), 1u);
  EXPECT_EQ(Call(nr::ppoll, buf_ + 64, 1, 0, 0, 8).error(), kERestartNoHand);
  uint64_t set = uint64_t{1} << r;
  Put(buf_ + 300, &set, 8);
  EXPECT_EQ(Call(nr::select, r + 1, buf_ + 300, 0, 0, 0).error(),
            kERestartNoHand);
  int64_t ep = Call(nr::epoll_create1, 0).value();
  EXPECT_EQ(Call(nr::epoll_wait, ep, buf_ + 400, 4, -1).error(),
            kERestartNoHand);
  // Host files (the sandbox's stdio): readiness is the host's.
  int host_r, host_w;
  InstallPipe(20, 21, &host_r, &host_w);
  pollfd hp[2] = {{20, POLLIN, 0}, {21, POLLOUT, 0}};
  Put(buf_ + 64, hp, sizeof(hp));
  EXPECT_EQ(Call(nr::poll, buf_ + 64, 2, 0).value(), 1u);
  EXPECT_EQ(Get<pollfd>(buf_ + 72).revents, POLLOUT);
  ASSERT_EQ(write(host_w, "y", 1), 1);
  EXPECT_EQ(Call(nr::poll, buf_ + 64, 2, 0).value(), 2u);
  EXPECT_EQ(Get<pollfd>(buf_ + 64).revents, POLLIN);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = 77;
  Put(buf_ + 500, &ev, sizeof(ev));
  ASSERT_TRUE(Call(nr::epoll_ctl, ep, EPOLL_CTL_ADD, 20, buf_ + 500).ok());
  EXPECT_EQ(Call(nr::epoll_wait, ep, buf_ + 600, 4, 0).value(), 1u);
  EXPECT_EQ(Get<uint64_t>(buf_ + 604), 77u);
  close(host_r);
  close(host_w);
}

TEST_F(SyscallsTest, TimerfdAndSignalfd) {
  // timerfd: a 1 ms one-shot, its count read once; the checks' errnos.
  EXPECT_EQ(Call(nr::timerfd_create, CLOCK_MONOTONIC, 1).error(), kEINVAL);
  EXPECT_EQ(Call(nr::timerfd_create, CLOCK_MONOTONIC_RAW, 0).error(), kEINVAL);
  const int64_t t =
      Call(nr::timerfd_create, CLOCK_MONOTONIC, O_NONBLOCK).value();
  const int64_t spec[4] = {0, 0, 0, 1000000};  // interval, value
  Put(buf_, spec, sizeof(spec));
  EXPECT_EQ(Call(nr::timerfd_settime, t, 4, buf_, 0).error(), kEINVAL);
  EXPECT_EQ(Call(nr::timerfd_settime, t, 0, 8, 0).error(), kEFAULT);
  EXPECT_EQ(Call(nr::timerfd_settime, 99, 0, buf_, 0).error(), kEBADF);
  ASSERT_TRUE(Call(nr::timerfd_settime, t, 0, buf_, 0).ok());
  usleep(20000);
  EXPECT_EQ(Call(nr::read, t, buf_ + 64, 7).error(), kEINVAL);
  ASSERT_EQ(Call(nr::read, t, buf_ + 64, 8).value(), 8u);
  EXPECT_EQ(Get<uint64_t>(buf_ + 64), 1u);
  EXPECT_EQ(Call(nr::read, t, buf_ + 64, 8).error(), kEAGAIN);
  // signalfd: sizes, flags, updates of an existing one only.
  const uint64_t mask = uint64_t{1} << (SIGUSR1 - 1);
  Put(buf_ + 128, &mask, 8);
  EXPECT_EQ(Call(nr::signalfd4, -1, buf_ + 128, 4, 0).error(), kEINVAL);
  EXPECT_EQ(Call(nr::signalfd4, -1, 8, 8, 0).error(), kEFAULT);
  EXPECT_EQ(Call(nr::signalfd4, -1, buf_ + 128, 8, 1).error(), kEINVAL);
  EXPECT_EQ(Call(nr::signalfd4, t, buf_ + 128, 8, 0).error(), kEINVAL);
  const int64_t s = Call(nr::signalfd, -1, buf_ + 128, 8).value();
  EXPECT_EQ(Call(nr::signalfd4, s, buf_ + 128, 8, 0).value(),
            static_cast<uint64_t>(s));
  EXPECT_EQ(Call(nr::timerfd_gettime, s, buf_).error(), kEINVAL);
}

}  // namespace
}  // namespace sandbox::syscalls
