#include "platform/systrap/systrap.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "platform/guest_copy.h"
#include "platform/host_fds.h"
#include "platform/long_work.h"
#include "platform/memory_file.h"
#include "platform/systrap/seccomp_filters.h"
#include "platform/systrap/stub_abi.h"

namespace sandbox::platform {
namespace {

constexpr uintptr_t kCode = 0x400000;
constexpr uintptr_t kData = 0x500000;
constexpr uintptr_t kHole = 0x600000;
constexpr uint64_t kPage = 4096;

// Children of this process, over all its threads.
std::set<pid_t> Children() {
  std::set<pid_t> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/children");
    pid_t p;
    while (f >> p) out.insert(p);
  }
  closedir(d);
  return out;
}

// Open files of process `pid`: fd -> readlink target.
std::map<int, std::string> Fds(pid_t pid) {
  std::map<int, std::string> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char buf[256] = {};
    if (readlink((dir + "/" + e->d_name).c_str(), buf, sizeof(buf) - 1) > 0) {
      out[atoi(e->d_name)] = buf;
    }
  }
  closedir(d);
  return out;
}

const stub_params& Params(Platform& p) {
  return *reinterpret_cast<const stub_params*>(p.MaxUserAddress());
}

class SystrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mf = MemoryFile::Create(256 << 20);
    ASSERT_TRUE(mf.ok()) << mf.status();
    auto p = NewSystrapPlatform(std::move(*mf));
    ASSERT_TRUE(p.ok()) << p.status();
    platform_ = std::move(*p);
    auto as = platform_->NewAddressSpace();
    ASSERT_TRUE(as.ok()) << as.status();
    as_ = std::move(*as);
    auto ctx = platform_->NewContext();
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
    code_off_ = Alloc(kPage);
    data_off_ = Alloc(kPage);
    ASSERT_TRUE(
        as_->MapFile(kCode, code_off_, kPage, PROT_READ | PROT_EXEC).ok());
    ASSERT_TRUE(
        as_->MapFile(kData, data_off_, kPage, PROT_READ | PROT_WRITE).ok());
  }
  void TearDown() override {
    ctx_.reset();
    as_.reset();
    platform_.reset();
  }

  uint64_t Alloc(uint64_t n) {
    auto off = platform_->memory_file().Allocate(n);
    EXPECT_TRUE(off.ok());
    return *off;
  }

  void Code(const std::vector<uint8_t>& code) {
    ASSERT_TRUE(
        platform_->memory_file().Write(code_off_, code.data(), code.size()));
  }

  CpuState Start() {
    CpuState s;
    s.regs.rip = kCode;
    s.regs.rsp = kData + kPage - 64;
    s.regs.eflags = 0x202;
    return s;
  }

  std::unique_ptr<Platform> platform_;
  std::unique_ptr<AddressSpace> as_;
  std::unique_ptr<Context> ctx_;
  uint64_t code_off_ = 0, data_off_ = 0;
};

TEST_F(SystrapTest, SyscallArgumentsAndResult) {
  // syscall; mov %rax,%rbx; syscall
  Code({0x0f, 0x05, 0x48, 0x89, 0xc3, 0x0f, 0x05});
  CpuState s = Start();
  s.regs.rax = 39;
  s.regs.rdi = 0x1111111111111111;
  s.regs.rsi = 0x2222222222222222;
  s.regs.rdx = 0x3333333333333333;
  s.regs.r10 = 0x4444444444444444;
  s.regs.r8 = 0x5555555555555555;
  s.regs.r9 = 0x6666666666666666;
  s.regs.rbp = 0x7777;
  s.regs.r15 = 0x8888;
  SwitchResult r = ctx_->Switch(*as_, s);
  ASSERT_EQ(r.reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.orig_rax, 39u);
  EXPECT_EQ(s.regs.rdi, 0x1111111111111111u);
  EXPECT_EQ(s.regs.rsi, 0x2222222222222222u);
  EXPECT_EQ(s.regs.rdx, 0x3333333333333333u);
  EXPECT_EQ(s.regs.r10, 0x4444444444444444u);
  EXPECT_EQ(s.regs.r8, 0x5555555555555555u);
  EXPECT_EQ(s.regs.r9, 0x6666666666666666u);
  EXPECT_EQ(s.regs.rbp, 0x7777u);
  EXPECT_EQ(s.regs.r15, 0x8888u);
  EXPECT_EQ(s.regs.rip, kCode + 2);
  // The FP image stays with the platform until the Sentry asks for it.
  EXPECT_TRUE(s.fp_stale);
  ctx_->SyncFp(s);
  EXPECT_FALSE(s.fp_stale);
  EXPECT_EQ(s.fp.size(), platform_->FpStateSize());
  s.regs.rax = 0xabcdef;
  s.regs.rbx = 0;
  r = ctx_->Switch(*as_, s);
  ASSERT_EQ(r.reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.rbx, 0xabcdefu);
  EXPECT_EQ(s.regs.orig_rax, 0xabcdefu);
  EXPECT_EQ(s.regs.rip, kCode + 7);
}

TEST_F(SystrapTest, FaultOnUnmappedPageResumesAfterMapping) {
  // mov (%rdi),%rax; syscall
  Code({0x48, 0x8b, 0x07, 0x0f, 0x05});
  CpuState s = Start();
  s.regs.rdi = kHole + 8;
  SwitchResult r = ctx_->Switch(*as_, s);
  ASSERT_EQ(r.reason, SwitchReason::kFault);
  EXPECT_EQ(r.signal.si_signo, SIGSEGV);
  EXPECT_EQ(r.signal.si_code, SEGV_MAPERR);
  EXPECT_EQ(r.signal.si_addr, reinterpret_cast<void*>(kHole + 8));
  EXPECT_TRUE(r.access.read);
  EXPECT_FALSE(r.access.write);
  EXPECT_EQ(s.regs.rip, kCode);

  uint64_t off = Alloc(kPage);
  uint64_t v = 0x1234567890;
  ASSERT_TRUE(platform_->memory_file().Write(off + 8, &v, 8));
  ASSERT_TRUE(as_->MapFile(kHole, off, kPage, PROT_READ).ok());
  r = ctx_->Switch(*as_, s);
  ASSERT_EQ(r.reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.orig_rax, v);

  // A write to the read-only page: SEGV_ACCERR, write access.
  Code({0x48, 0x89, 0x07});
  s = Start();
  s.regs.rdi = kHole;
  r = ctx_->Switch(*as_, s);
  ASSERT_EQ(r.reason, SwitchReason::kFault);
  EXPECT_EQ(r.signal.si_code, SEGV_ACCERR);
  EXPECT_TRUE(r.access.write);

  // Unmap: the read faults again.
  ASSERT_TRUE(as_->Unmap(kHole, kPage).ok());
  Code({0x48, 0x8b, 0x07, 0x0f, 0x05});
  s = Start();
  s.regs.rdi = kHole;
  r = ctx_->Switch(*as_, s);
  ASSERT_EQ(r.reason, SwitchReason::kFault);
  EXPECT_EQ(r.signal.si_code, SEGV_MAPERR);
}

TEST_F(SystrapTest, ExecuteFault) {
  CpuState s = Start();
  s.regs.rip = kData;  // mapped without PROT_EXEC
  SwitchResult r = ctx_->Switch(*as_, s);
  ASSERT_EQ(r.reason, SwitchReason::kFault);
  EXPECT_EQ(r.signal.si_signo, SIGSEGV);
  EXPECT_TRUE(r.access.execute);
}

TEST_F(SystrapTest, Traps) {
  struct Case {
    std::vector<uint8_t> code;
    int signo;
  } cases[] = {
      {{0x31, 0xd2, 0x31, 0xc9, 0xf7, 0xf1}, SIGFPE},  // div by zero
      {{0xcc}, SIGTRAP},                               // int3
      {{0x0f, 0x0b}, SIGILL},                          // ud2
  };
  for (const Case& c : cases) {
    Code(c.code);
    CpuState s = Start();
    s.regs.rax = 5;
    SwitchResult r = ctx_->Switch(*as_, s);
    ASSERT_EQ(r.reason, SwitchReason::kFault) << c.signo;
    EXPECT_EQ(r.signal.si_signo, c.signo);
    if (c.signo == SIGFPE) {
      EXPECT_EQ(r.signal.si_code, FPE_INTDIV);
      EXPECT_EQ(s.regs.rip, kCode + 4);
    } else if (c.signo == SIGTRAP) {
      EXPECT_EQ(s.regs.rip, kCode + 1);
    } else {
      EXPECT_EQ(s.regs.rip, kCode);
    }
  }
  // The context keeps working after faults.
  Code({0x0f, 0x05});
  CpuState s = Start();
  s.regs.rax = 60;
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.orig_rax, 60u);
}

// A 32-bit syscall (int $0x80) is reported with orig_rax marked so that the
// Sentry can refuse it (the x86-64 numbers do not apply), or faults where
// the host kernel has no IA-32 emulation.
TEST_F(SystrapTest, Int80IsTrappedAndMarked) {
  Code({0xcd, 0x80, 0x0f, 0x05});
  CpuState s = Start();
  s.regs.rax = 20;  // getpid on i386
  SwitchResult r = ctx_->Switch(*as_, s);
  if (r.reason == SwitchReason::kFault) {
    EXPECT_EQ(r.signal.si_signo, SIGSEGV);
    EXPECT_EQ(s.regs.rip, kCode);
    return;
  }
  ASSERT_EQ(r.reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.orig_rax, 0x86000000u | 20);
  EXPECT_EQ(s.regs.rip, kCode + 2);
}

// A call into the legacy vsyscall page never runs the host's emulation.
TEST_F(SystrapTest, VsyscallPageDoesNotReachTheHost) {
  // mov $0xffffffffff600000,%rax; call *%rax; syscall
  Code({0x48, 0xc7, 0xc0, 0x00, 0x00, 0x60, 0xff, 0xff, 0xd0, 0x0f, 0x05});
  CpuState s = Start();
  s.regs.rdi = kData;  // struct timeval *
  s.regs.rsi = 0;
  SwitchResult r = ctx_->Switch(*as_, s);
  if (r.reason == SwitchReason::kSyscall) {
    // Emulated through the seccomp trap: reported as gettimeofday.
    EXPECT_EQ(s.regs.orig_rax, static_cast<uint64_t>(SYS_gettimeofday));
  } else {
    ASSERT_EQ(r.reason, SwitchReason::kFault);
    EXPECT_EQ(r.signal.si_signo, SIGSEGV);
  }
  uint64_t tv[2] = {1, 1};
  ASSERT_TRUE(platform_->memory_file().Read(data_off_, tv, sizeof(tv)));
  EXPECT_EQ(tv[0], 0u) << "the host wrote the time into guest memory";
}

TEST_F(SystrapTest, Cpuid) {
  if (!ProbeSystrapFeatures().cpuid_faulting) {
    GTEST_SKIP() << "host has no CPUID faulting (arch_prctl(ARCH_SET_CPUID) "
                    "fails): CPUID runs natively in guests";
  }
  // cpuid; mov %rcx,%rsi; syscall (the syscall instruction itself overwrites
  // %rcx with the return address, so %ecx is read from %rsi).
  Code({0x0f, 0xa2, 0x48, 0x89, 0xce, 0x0f, 0x05});
  for (uint32_t leaf : {0u, 1u, 7u, 0xdu}) {
    CpuState s = Start();
    s.regs.rax = leaf;
    s.regs.rcx = 0;
    ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
    uint32_t want[4];
    platform_->Cpuid(leaf, 0, want);
    EXPECT_EQ(s.regs.rbx, want[1]) << leaf;
    EXPECT_EQ(s.regs.rsi, want[2]) << leaf;
    EXPECT_EQ(s.regs.rdx, want[3]) << leaf;
    EXPECT_EQ(s.regs.rip, kCode + 7);
  }
}

TEST(SystrapCpuidTableTest, ConsistentWithXsave) {
  auto mf = MemoryFile::Create(64 << 20);
  ASSERT_TRUE(mf.ok());
  auto p = NewSystrapPlatform(std::move(*mf));
  ASSERT_TRUE(p.ok()) << p.status();
  uint32_t r[4];
  (*p)->Cpuid(0xd, 0, r);
  EXPECT_EQ(r[1], (*p)->FpStateSize());
  EXPECT_EQ(r[0] & (1u << 18), 0u);  // no AMX tile data
  (*p)->Cpuid(7, 0, r);
  EXPECT_EQ(r[3] & (1u << 24), 0u);  // no AMX-TILE
  EXPECT_EQ(r[2] & (1u << 3), 0u);   // no PKU
  (*p)->Cpuid(0, 0, r);
  EXPECT_NE(r[1], 0u);  // vendor
}

// Finds a `syscall` instruction inside the stub's code.
uintptr_t StubSyscallInsn(Platform& p) {
  uintptr_t code = p.MaxUserAddress() + STUB_CODE_OFF;
  auto* b = reinterpret_cast<const uint8_t*>(code);
  for (size_t i = 0; i + 1 < STUB_CODE_MAX; ++i) {
    if (b[i] == 0x0f && b[i + 1] == 0x05) return code + i;
  }
  return 0;
}

TEST_F(SystrapTest, JumpIntoStubSyscallWithHostileRegisters) {
  Code({0x0f, 0x05});
  uintptr_t insn = StubSyscallInsn(*platform_);
  ASSERT_NE(insn, 0u);
  struct Case {
    uint64_t nr, a0, a1, a2, a3, a4;
  } cases[] = {
      // mmap of the memory file over guest memory: allowed only for the
      // syscall thread.
      {SYS_mmap, kHole, kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
       static_cast<uint64_t>(platform_->memory_file().fd())},
      {SYS_getpid, 0, 0, 0, 0, 0},
      {SYS_exit_group, 0, 0, 0, 0, 0},
      {SYS_clone, kStubThreadCloneFlags, 0, 0, 0, 0},
      // futex with an op the filter does not pin (FUTEX_REQUEUE).
      {SYS_futex, kData, 3, 1, 0, 0},
      // futex WAIT on an address outside the thread regions.
      {SYS_futex, kData, 0, 0, 0, 0},
      {SYS_arch_prctl, 0x1012 /*ARCH_SET_CPUID*/, 1, 0, 0, 0},
      // A forged reply on the reply pipe: only the syscall thread may write.
      {SYS_write, static_cast<uint64_t>(Params(*platform_).reply_fd),
       platform_->MaxUserAddress() + STUB_REQUEST_OFF, 1, 0, 0},
      // Reads are allowed on the data pipe only: not on the memory file
      // (every process's memory) nor on the reply pipe.
      {SYS_read, static_cast<uint64_t>(platform_->memory_file().fd()), kData, 1,
       0, 0},
      {SYS_read, static_cast<uint64_t>(Params(*platform_).reply_fd), kData, 1,
       0, 0},
  };
  for (const Case& c : cases) {
    auto as = platform_->NewAddressSpace();
    ASSERT_TRUE(as.ok());
    CpuState s = Start();
    s.regs.rip = insn;
    s.regs.rax = c.nr;
    s.regs.rdi = c.a0;
    s.regs.rsi = c.a1;
    s.regs.rdx = c.a2;
    s.regs.r10 = c.a3;
    s.regs.r8 = c.a4;
    SwitchResult r = ctx_->Switch(**as, s);
    // Inside the stub's code the guest filter applies (syscall user
    // dispatch lets the call through to seccomp): it kills the stub. Had
    // the call run, the guest would continue inside stub code instead.
    EXPECT_EQ(r.reason, SwitchReason::kDead)
        << "nr " << c.nr << " reason " << static_cast<int>(r.reason);
    // The Sentry's own view is unharmed: other address spaces still work.
    CpuState ok = Start();
    ASSERT_EQ(ctx_->Switch(*as_, ok).reason, SwitchReason::kSyscall);
  }
}

// A guest thread that keeps garbling the syscall thread's reply page (it is
// writable from guest code) must never make an address-space change hang the
// Sentry: the request either completes or the stub is killed within the
// deadline, and the guest then sees kDead.
TEST_F(SystrapTest, GarbledReplyPageNeverHangsTheSentry) {
  const uint64_t res = platform_->MaxUserAddress() + STUB_RESULT_OFF;
  std::vector<uint8_t> code = {0x48, 0xbf};  // movabs rdi, res
  for (int i = 0; i < 8; ++i) code.push_back((res >> (8 * i)) & 0xff);
  // loop: movl $0, (rdi); movl $0, 4(rdi); jmp loop
  const std::vector<uint8_t> loop = {
      0xc7, 0x07, 0,    0, 0, 0,     // movl $0, (%rdi)
      0xc7, 0x47, 0x04, 0, 0, 0, 0,  // movl $0, 4(%rdi)
      0xeb, 0xf1};                   // jmp loop
  code.insert(code.end(), loop.begin(), loop.end());
  Code(code);
  std::atomic<int> reason{-1};
  std::thread guest([&] {
    CpuState s = Start();
    SwitchResult r = ctx_->Switch(*as_, s);
    if (r.reason == SwitchReason::kFault) {
      ADD_FAILURE() << "guest fault: signal " << r.signal.si_signo << " at "
                    << r.signal.si_addr << " rip " << std::hex << s.regs.rip;
    }
    reason = static_cast<int>(r.reason);
  });
  usleep(50 * 1000);  // Let the guest start garbling.
  const uint64_t off = Alloc(kPage);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5 && reason.load() < 0; ++i) {
    (void)as_->MapFile(kHole, off, kPage, PROT_READ);
    (void)as_->Unmap(kHole, kPage);
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(30));
  if (reason.load() < 0) ctx_->Interrupt();
  guest.join();
  EXPECT_TRUE(reason == static_cast<int>(SwitchReason::kDead) ||
              reason == static_cast<int>(SwitchReason::kInterrupted))
      << "reason " << reason;
}

// The result page is writable from guest code. A guest thread that keeps
// forging a plausible reply there ({seq of the pending request, ret = what
// the call would return}, "syscall thread awake" so that it is not woken)
// must not make the Sentry believe that an unmap or a protection downgrade
// happened when it did not: the Sentry frees unmapped pages and shares
// read-only pages copy-on-write, so a page the guest still reached would
// leak or corrupt another process's memory. Replies come through a pipe
// only the syscall thread can write to; this test fails with the old
// result-page protocol (the victim's read of the unmapped page succeeds).
TEST_F(SystrapTest, ForgedResultPageCannotFakeUnmapOrReprotect) {
  const uint64_t req = platform_->MaxUserAddress() + STUB_REQUEST_OFF;
  const uint64_t counter = kData + 0x100;
  // rsi = request page, rdi = result page, rbx = counter; forever:
  //   ret = sysno == munmap ? 0 : args[0]; res->ret = ret;
  //   res->waiting = 0; res->seq = req->seq; ++*counter.
  std::vector<uint8_t> forger = {0x48, 0xbe};
  for (int i = 0; i < 8; ++i) forger.push_back((req >> (8 * i)) & 0xff);
  for (uint8_t b : {0x48, 0x8d, 0xbe, 0x00, 0x10, 0x00, 0x00, 0x48, 0xbb}) {
    forger.push_back(b);
  }
  for (int i = 0; i < 8; ++i) forger.push_back((counter >> (8 * i)) & 0xff);
  for (uint8_t b : {0x48, 0x8b, 0x46, 0x08, 0x31, 0xc9, 0x48, 0x83, 0xf8,
                    0x0b, 0x74, 0x04, 0x48, 0x8b, 0x4e, 0x10, 0x48, 0x89,
                    0x4f, 0x08, 0xc7, 0x47, 0x04, 0x00, 0x00, 0x00, 0x00,
                    0x8b, 0x06, 0x89, 0x07, 0x48, 0xff, 0x03, 0xeb, 0xdc}) {
    forger.push_back(b);
  }
  MemoryFile& mf = platform_->memory_file();
  ASSERT_TRUE(mf.Write(code_off_ + 0x800, forger.data(), forger.size()));
  // The victim: at kCode, mov (%rdi),%rax; syscall. At kCode+16,
  // mov %rax,(%rdi); syscall.
  std::vector<uint8_t> victim(32, 0x90);
  const uint8_t rd[] = {0x48, 0x8b, 0x07, 0x0f, 0x05};
  const uint8_t wr[] = {0x48, 0x89, 0x07, 0x0f, 0x05};
  std::copy(rd, rd + 5, victim.begin());
  std::copy(wr, wr + 5, victim.begin() + 16);
  Code(victim);

  const uint64_t off = Alloc(kPage);
  const uint64_t magic = 0x5a5a5a5a12345678;
  ASSERT_TRUE(mf.Write(off, &magic, 8));
  ASSERT_TRUE(as_->MapFile(kHole, off, kPage, PROT_READ | PROT_WRITE).ok());

  auto fctx = platform_->NewContext();
  ASSERT_TRUE(fctx.ok());
  std::atomic<int> forger_reason{-1};
  std::thread forger_thread([&] {
    CpuState s = Start();
    s.regs.rip = kCode + 0x800;
    forger_reason = static_cast<int>((*fctx)->Switch(*as_, s).reason);
  });
  // Stops the forger however the test ends (ASSERTs return early).
  struct StopForger {
    Context* ctx;
    std::thread* t;
    ~StopForger() {
      ctx->Interrupt();
      t->join();
    }
  } stop{fctx->get(), &forger_thread};
  // Wait until the forger runs.
  uint64_t n = 0;
  for (int i = 0; i < 2000 && n == 0; ++i) {
    usleep(1000);
    ASSERT_TRUE(mf.Read(data_off_ + 0x100, &n, 8));
  }
  ASSERT_NE(n, 0u) << "forger did not start";

  for (int round = 0; round < 3; ++round) {
    // Unmap: the victim's read must fault.
    ASSERT_TRUE(as_->Unmap(kHole, kPage).ok()) << round;
    CpuState s = Start();
    s.regs.rdi = kHole;
    SwitchResult r = ctx_->Switch(*as_, s);
    ASSERT_EQ(r.reason, SwitchReason::kFault)
        << "round " << round << ": the guest still reads the page the "
        << "Sentry unmapped (reason " << static_cast<int>(r.reason) << ")";
    EXPECT_EQ(r.signal.si_code, SEGV_MAPERR);

    // Map writable, then downgrade to read-only as fork's copy-on-write
    // does: the victim's write must fault and leave the page alone.
    ASSERT_TRUE(as_->MapFile(kHole, off, kPage, PROT_READ | PROT_WRITE).ok());
    ASSERT_TRUE(as_->MapFile(kHole, off, kPage, PROT_READ).ok());
    s = Start();
    s.regs.rip = kCode + 16;
    s.regs.rdi = kHole;
    s.regs.rax = 0xbad;
    r = ctx_->Switch(*as_, s);
    ASSERT_EQ(r.reason, SwitchReason::kFault)
        << "round " << round << ": the guest wrote to a page the Sentry "
        << "made read-only (reason " << static_cast<int>(r.reason) << ")";
    EXPECT_EQ(r.signal.si_code, SEGV_ACCERR);
    EXPECT_TRUE(r.access.write);
    uint64_t v = 0;
    ASSERT_TRUE(mf.Read(off, &v, 8));
    EXPECT_EQ(v, magic);
    ASSERT_TRUE(as_->MapFile(kHole, off, kPage, PROT_READ | PROT_WRITE).ok());
  }
  uint64_t n2 = 0;
  ASSERT_TRUE(mf.Read(data_off_ + 0x100, &n2, 8));
  EXPECT_GT(n2, n) << "the forger stopped forging";
  (*fctx)->Interrupt();
  for (int i = 0; i < 5000 && forger_reason.load() < 0; ++i) usleep(1000);
  EXPECT_EQ(forger_reason.load(), static_cast<int>(SwitchReason::kInterrupted));
}

TEST_F(SystrapTest, InterruptSpinningGuest) {
  Code({0xeb, 0xfe});  // jmp .
  CpuState s = Start();
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx_->Interrupt();
  });
  auto t0 = std::chrono::steady_clock::now();
  SwitchResult r = ctx_->Switch(*as_, s);
  auto dt = std::chrono::steady_clock::now() - t0;
  t.join();
  EXPECT_EQ(r.reason, SwitchReason::kInterrupted);
  EXPECT_EQ(s.regs.rip, kCode);
  EXPECT_LT(dt, std::chrono::seconds(2));
  // An interrupt before Switch makes it return at once; ClearInterrupt
  // drops it.
  ctx_->Interrupt();
  EXPECT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kInterrupted);
  ctx_->Interrupt();
  ctx_->ClearInterrupt();
  Code({0x0f, 0x05});
  s = Start();
  EXPECT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
}

// Interrupts racing a guest that traps in a tight loop land anywhere: in
// guest code, in the stub's handler before it hands off, while it waits, or
// in its return path (stub.c's commit window). Every event must still carry
// the guest's exact state: general registers, XMM registers (the FP image the
// Sentry loads sometimes and keeps otherwise) and the instruction pointer.
TEST_F(SystrapTest, InterruptsRacingTrapsKeepTheGuestState) {
  // loop: inc %rbx; movq %rbx,%xmm0; syscall; jmp loop
  Code(
      {0x48, 0xff, 0xc3, 0x66, 0x48, 0x0f, 0x6e, 0xc3, 0x0f, 0x05, 0xeb, 0xf4});
  CpuState s = Start();
  s.regs.r12 = 0x1212121212121212;
  s.regs.r15 = 0x1515151515151515;
  s.regs.rbp = 0xbbbbbbbbbbbbbbbb;
  constexpr size_t kXmm0 = 160, kXmm1 = 176;
  auto xmm = [&](size_t off) {
    uint64_t v = 0;
    if (s.fp.size() >= off + 8) memcpy(&v, s.fp.data() + off, 8);
    return v;
  };
  std::atomic<bool> done{false};
  std::thread kicker([&] {
    while (!done.load()) {
      ctx_->Interrupt();
      std::this_thread::sleep_for(std::chrono::microseconds(30));
    }
  });
  struct Joiner {  // also on an early return from a failed ASSERT
    std::atomic<bool>& done;
    std::thread& t;
    ~Joiner() {
      done.store(true);
      if (t.joinable()) t.join();
    }
  } joiner{done, kicker};
  uint64_t last = 0, xmm1 = 0;
  int syscalls = 0, interrupts = 0;
  // At least 1.5 s of races, and on (at most 10 s) until both kinds of
  // event were seen often enough: a loaded host runs the loop slowly.
  const auto start = std::chrono::steady_clock::now();
  auto racing = [&] {
    const auto t = std::chrono::steady_clock::now() - start;
    return t < std::chrono::milliseconds(1500) ||
           ((syscalls <= 100 || interrupts <= 10) &&
            t < std::chrono::seconds(10));
  };
  while (racing()) {
    SwitchResult r = ctx_->Switch(*as_, s);
    ASSERT_NE(r.reason, SwitchReason::kDead);
    // Every other event, check the image the platform holds (SyncFp); in
    // between, leave it there (the next Switch keeps it).
    const bool sync = ((syscalls + interrupts) & 1) == 0;
    if (sync) {
      ctx_->SyncFp(s);
      ASSERT_FALSE(s.fp_stale);
    }
    ASSERT_EQ(s.regs.r12, 0x1212121212121212u);
    ASSERT_EQ(s.regs.r15, 0x1515151515151515u);
    ASSERT_EQ(s.regs.rbp, 0xbbbbbbbbbbbbbbbbu);
    if (sync) ASSERT_EQ(xmm(kXmm1), xmm1);
    if (r.reason == SwitchReason::kSyscall) {
      ++syscalls;
      ASSERT_EQ(s.regs.rip, kCode + 10);
      ASSERT_EQ(s.regs.rbx, last + 1);
      if (sync) ASSERT_EQ(xmm(kXmm0), s.regs.rbx);
      last = s.regs.rbx;
      s.regs.rax = 0;
    } else {
      ASSERT_EQ(r.reason, SwitchReason::kInterrupted);
      ++interrupts;
      ASSERT_TRUE(s.regs.rbx == last || s.regs.rbx == last + 1)
          << s.regs.rbx << " after " << last;
      const uint64_t ip = s.regs.rip - kCode;
      ASSERT_TRUE(ip == 0 || ip == 3 || ip == 8 || ip == 10) << ip;
      if (sync) {
        ASSERT_EQ(xmm(kXmm0), ip == 3 ? s.regs.rbx - 1 : s.regs.rbx);
      }
    }
    // Now and then the Sentry changes the FP state (signal delivery does):
    // the stub must load the new image, and keep it on later round trips.
    if (sync && (syscalls + interrupts) % 7 == 0 && s.fp.size() >= kXmm1 + 8) {
      ++xmm1;
      memcpy(s.fp.data() + kXmm1, &xmm1, 8);
      s.fp_changed = true;
    }
  }
  done.store(true);
  kicker.join();
  ctx_->ClearInterrupt();
  std::cout << syscalls << " syscalls, " << interrupts << " interrupts\n";
  EXPECT_GT(syscalls, 100);
  EXPECT_GT(interrupts, 10);
}

// A guest that jumps to the stub's rt_sigreturn with a forged frame can set
// its own signal mask; the platform undoes it at the next trap, so the
// interrupt signal still lands.
TEST_F(SystrapTest, ForgedSigreturnCannotBlockInterrupts) {
  // At kCode: loop: syscall; jmp loop.  At kCode+16: jmp .
  std::vector<uint8_t> code(32, 0x90);
  code[0] = 0x0f;
  code[1] = 0x05;
  code[2] = 0xeb;
  code[3] = 0xfc;
  code[16] = 0xeb;
  code[17] = 0xfe;
  Code(code);
  CpuState s = Start();
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);

  // Find this thread's altstack from the stub's maps (white box): the only
  // writable mapping in the thread regions.
  pid_t pid = SystrapStubPid(*as_);
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  uintptr_t base = platform_->MaxUserAddress() + STUB_THREADS_OFF;
  uintptr_t lo = 0, hi = 0;
  std::string line;
  while (std::getline(maps, line)) {
    uintptr_t a = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    uintptr_t b = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    if (a >= base && a < base + (1ul << 28)) lo = a, hi = b;
  }
  ASSERT_NE(lo, 0u);
  uint64_t slot_bytes =
      (1024 + platform_->FpStateSize() + 64 + 4095) & ~uint64_t{4095};
  uint64_t alt = lo + slot_bytes;

  // The forged ucontext at kData+0x100: resume at the spin loop, SIGCHLD
  // blocked, the altstack unchanged.
  uint8_t uc[304] = {};
  auto put64 = [&](size_t off, uint64_t v) { memcpy(uc + off, &v, 8); };
  put64(0, 2 | 4);                 // uc_flags: SS, STRICT_RESTORE_SS
  put64(16, alt);                  // uc_stack.ss_sp
  put64(32, hi - alt);             // uc_stack.ss_size
  put64(40 + 120, kData + 0x800);  // rsp
  put64(40 + 128, kCode + 16);     // rip
  put64(40 + 136, 0x202);          // eflags
  uint16_t cs = 0x33, ss = 0x2b;
  memcpy(uc + 40 + 144, &cs, 2);
  memcpy(uc + 40 + 150, &ss, 2);
  put64(296, 1ull << (SIGCHLD - 1));  // uc_sigmask
  ASSERT_TRUE(
      platform_->memory_file().Write(data_off_ + 0x100, uc, sizeof(uc)));
  // The restorer: `mov $15,%eax; syscall` in the stub's code.
  uintptr_t code_start = platform_->MaxUserAddress() + STUB_CODE_OFF;
  auto* b = reinterpret_cast<const uint8_t*>(code_start);
  uintptr_t restorer = 0;
  for (size_t i = 0; i + 7 <= STUB_CODE_MAX; ++i) {
    if (b[i] == 0xb8 && b[i + 1] == 15 && b[i + 2] == 0 && b[i + 3] == 0 &&
        b[i + 4] == 0 && b[i + 5] == 0x0f && b[i + 6] == 0x05) {
      restorer = code_start + i + 5;
      break;
    }
  }
  ASSERT_NE(restorer, 0u);
  s.regs.rip = restorer;
  s.regs.rax = 15;
  s.regs.rsp = kData + 0x100;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ctx_->Interrupt();
  });
  // The forged sigreturn runs (allowed from stub code) and the guest spins
  // with SIGCHLD blocked: the interrupt cannot land, so the platform kills
  // the stub after SystrapOptions::interrupt_kill_ms (1 s). A safety net
  // (at 20 s, past the bound below) turns a hang into a failure.
  std::atomic<bool> done1{false};
  std::thread killer([&] {
    for (int i = 0; i < 2000 && !done1.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!done1.load()) kill(pid, SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  SwitchResult r = ctx_->Switch(*as_, s);
  auto dt = std::chrono::steady_clock::now() - t0;
  done1.store(true);
  t.join();
  killer.join();
  EXPECT_EQ(r.reason, SwitchReason::kDead)
      << std::hex << "rip " << s.regs.rip << " rsp " << s.regs.rsp;
  // Never before the deadline; the upper bound tells the platform's kill
  // from the safety net's, with room for a loaded host.
  EXPECT_GE(dt, std::chrono::milliseconds(1000));
  EXPECT_LT(dt, std::chrono::milliseconds(15000));

  // Same attack, but the guest traps once after the forged frame: rip at the
  // syscall loop, then the spin.
  ctx_->ClearInterrupt();  // never consumed: the stub died first
  auto as2 = platform_->NewAddressSpace();
  ASSERT_TRUE(as2.ok());
  ASSERT_TRUE(
      (*as2)->MapFile(kCode, code_off_, kPage, PROT_READ | PROT_EXEC).ok());
  ASSERT_TRUE(
      (*as2)->MapFile(kData, data_off_, kPage, PROT_READ | PROT_WRITE).ok());
  CpuState s2 = Start();
  ASSERT_EQ(ctx_->Switch(**as2, s2).reason, SwitchReason::kSyscall);
  put64(40 + 128, kCode);  // resume at the syscall loop
  ASSERT_TRUE(
      platform_->memory_file().Write(data_off_ + 0x100, uc, sizeof(uc)));
  s2.regs.rip = restorer;
  s2.regs.rax = 15;
  s2.regs.rsp = kData + 0x100;
  r = ctx_->Switch(**as2, s2);
  ASSERT_EQ(r.reason, SwitchReason::kSyscall);  // the loop's syscall
  EXPECT_EQ(s2.regs.rip, kCode + 2);
  s2.regs.rip = kCode + 16;  // now spin
  pid_t pid2 = SystrapStubPid(**as2);
  std::thread t2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ctx_->Interrupt();
  });
  std::atomic<bool> done{false};
  std::thread killer2([&] {  // turns a hang into a failure
    for (int i = 0; i < 1000 && !done.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!done.load()) kill(pid2, SIGKILL);
  });
  r = ctx_->Switch(**as2, s2);
  done.store(true);
  t2.join();
  killer2.join();
  EXPECT_EQ(r.reason, SwitchReason::kInterrupted);
}

// Issue 17, finding 3: with no descriptor left in the Sentry the source
// stub's SCM_RIGHTS message arrives truncated (MSG_CTRUNC). The address
// space fails with an error (the drain of the message uses recvmsg, the only
// receive the Sentry's seccomp allowlist has; recv killed it with SIGSYS),
// nothing stays queued, and the next address space works.
TEST_F(SystrapTest, NewAddressSpaceWithoutHostFdsFailsCleanlyAndRecovers) {
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  int top = 0;
  for (const auto& [fd, target] : Fds(getpid())) top = std::max(top, fd);
  struct rlimit low = saved;
  low.rlim_cur = top + 1;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> fill;  // every free number below the limit
  for (int fd; (fd = dup(0)) >= 0;) fill.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  auto none = platform_->NewAddressSpace();
  for (int fd : fill) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_FALSE(none.ok());
  auto as = platform_->NewAddressSpace();
  ASSERT_TRUE(as.ok()) << as.status();
  uint64_t off = Alloc(kPage);
  EXPECT_TRUE((*as)->MapFile(kData, off, kPage, PROT_READ | PROT_WRITE).ok());
}

// Past the host FD budget (platform/host_fds.h) a new address space is
// refused before anything is made (the guest's fork gets EAGAIN), and given
// back budget serves the next one.
TEST_F(SystrapTest, NewAddressSpacePastTheHostFdBudgetIsRefused) {
  HostFdBudget::Configure(1024);
  std::vector<HostFdHold> holds;
  for (HostFdHold h; (h = HostFdHold::Take(1)).ok();) {
    holds.push_back(std::move(h));
  }
  auto refused = platform_->NewAddressSpace();
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  holds.resize(holds.size() - 4);
  auto as = platform_->NewAddressSpace();
  EXPECT_TRUE(as.ok()) << as.status();
  as->reset();
  holds.clear();
  HostFdBudget::RaiseAndConfigure();
}

TEST_F(SystrapTest, KilledStubGivesDead) {
  Code({0xeb, 0xfe});
  CpuState s = Start();
  pid_t pid = SystrapStubPid(*as_);
  ASSERT_GT(pid, 0);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(pid, SIGKILL);
  });
  SwitchResult r = ctx_->Switch(*as_, s);
  t.join();
  EXPECT_EQ(r.reason, SwitchReason::kDead);
  EXPECT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kDead);
  EXPECT_FALSE(as_->MapFile(kHole, data_off_, kPage, PROT_READ).ok());
}

// A stub that dies while the Sentry waits for its reply: the reply pipe's
// end of file (or the pidfd watcher) ends the wait at once, not after the
// 5 s reply deadline, and every later request fails.
TEST_F(SystrapTest, StubDyingDuringRequestsFailsThemFast) {
  pid_t pid = SystrapStubPid(*as_);
  ASSERT_GT(pid, 0);
  const uint64_t off = Alloc(kPage);
  std::atomic<bool> failed{false};
  std::atomic<int> done{0};
  std::thread mm([&] {
    for (int i = 0; i < 100000 && !failed; ++i) {
      if (!as_->MapFile(kHole, off, kPage, PROT_READ).ok() ||
          !as_->Unmap(kHole, kPage).ok()) {
        failed = true;
      }
      done++;
    }
  });
  for (int i = 0; i < 10000 && done.load() < 20 && !failed; ++i) usleep(1000);
  const bool early = failed.load();
  if (!early) kill(pid, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  mm.join();
  ASSERT_FALSE(early) << "requests failed before the stub died";
  EXPECT_TRUE(failed.load());
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(2));
  EXPECT_FALSE(as_->Unmap(kHole, kPage).ok());
}

TEST_F(SystrapTest, FsBasePreserved) {
  // mov %fs:0x10,%rax; syscall; mov %fs:0x18,%rax; int3
  Code({0x64, 0x48, 0x8b, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00, 0x0f, 0x05,
        0x64, 0x48, 0x8b, 0x04, 0x25, 0x18, 0x00, 0x00, 0x00, 0xcc});
  uint64_t vals[2] = {0xf00d, 0xbeef};
  ASSERT_TRUE(platform_->memory_file().Write(data_off_ + 0x110, vals, 16));
  CpuState s = Start();
  s.regs.fs_base = kData + 0x100;
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.orig_rax, 0xf00du);
  EXPECT_EQ(s.regs.fs_base, kData + 0x100);
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kFault);
  EXPECT_EQ(s.regs.rax, 0xbeefu);
  EXPECT_EQ(s.regs.fs_base, kData + 0x100);
  // The Sentry changes fs_base (arch_prctl emulation).
  Code({0x64, 0x48, 0x8b, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00, 0x0f, 0x05});
  s.regs.rip = kCode;
  s.regs.fs_base = kData + 0x108;
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.orig_rax, 0xbeefu);
}

// Offsets in a standard-format XSAVE image.
constexpr size_t kXmmOff = 160;
constexpr size_t kYmmHiOff = 576;

TEST_F(SystrapTest, FpuAndAvxStatePreserved) {
  const SystrapFeatures f = ProbeSystrapFeatures();
  if (!(f.xfeatures & 4)) GTEST_SKIP() << "no AVX state in XCR0";
  // vmovdqa %ymm0,%ymm1 (c5 fd 6f c8); syscall; int3
  Code({0xc5, 0xfd, 0x6f, 0xc8, 0x0f, 0x05, 0xcc});
  CpuState s = Start();
  s.fp.assign(platform_->FpStateSize(), 0);
  uint16_t fcw = 0x37f;
  uint32_t mxcsr = 0x1f80;
  memcpy(s.fp.data(), &fcw, 2);
  memcpy(s.fp.data() + 24, &mxcsr, 4);
  uint64_t bv = 7;  // x87, SSE, AVX
  memcpy(s.fp.data() + 512, &bv, 8);
  for (int i = 0; i < 16; ++i) {
    s.fp[kXmmOff + i] = 0x10 + i;    // xmm0 low
    s.fp[kYmmHiOff + i] = 0x80 + i;  // ymm0 high
  }
  s.fp_changed = true;
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  ctx_->SyncFp(s);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(s.fp[kXmmOff + 16 + i], 0x10 + i) << i;    // xmm1
    EXPECT_EQ(s.fp[kYmmHiOff + 16 + i], 0x80 + i) << i;  // ymm1 high
  }
  EXPECT_FALSE(s.fp_changed);
  // The state stays in the thread across the trap and a fault.
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kFault);
  ctx_->SyncFp(s);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(s.fp[kXmmOff + 16 + i], 0x10 + i) << i;
    EXPECT_EQ(s.fp[kYmmHiOff + 16 + i], 0x80 + i) << i;
  }
}

// x87 control word and MXCSR set by the Sentry are what the guest sees, and
// what it sets comes back.
TEST_F(SystrapTest, X87AndMxcsrState) {
  // fnstcw (%rdi); stmxcsr 8(%rdi); fldcw 16(%rdi); ldmxcsr 24(%rdi); syscall
  Code({0xd9, 0x3f, 0x0f, 0xae, 0x5f, 0x08, 0xd9, 0x6f, 0x10, 0x0f, 0xae, 0x57,
        0x18, 0x0f, 0x05});
  uint64_t in[4] = {0, 0, 0x37f, 0x1f80};  // guest loads these next
  ASSERT_TRUE(platform_->memory_file().Write(data_off_, in, sizeof(in)));
  CpuState s = Start();
  s.regs.rdi = kData;
  s.fp.assign(platform_->FpStateSize(), 0);
  uint16_t fcw = 0x27f;     // 53-bit precision
  uint32_t mxcsr = 0x9fc0;  // FTZ, DAZ, round toward zero
  memcpy(s.fp.data(), &fcw, 2);
  memcpy(s.fp.data() + 24, &mxcsr, 4);
  uint64_t bv = 3;
  memcpy(s.fp.data() + 512, &bv, 8);
  s.fp_changed = true;
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  uint64_t out[2] = {};
  ASSERT_TRUE(platform_->memory_file().Read(data_off_, out, sizeof(out)));
  EXPECT_EQ(out[0] & 0xffff, 0x27fu);
  EXPECT_EQ(out[1] & 0xffffffff, 0x9fc0u);
  uint16_t fcw2;
  uint32_t mxcsr2;
  ctx_->SyncFp(s);
  memcpy(&fcw2, s.fp.data(), 2);
  memcpy(&mxcsr2, s.fp.data() + 24, 4);
  EXPECT_EQ(fcw2, 0x37f);
  EXPECT_EQ(mxcsr2, 0x1f80u);
}

TEST_F(SystrapTest, Avx512StatePreserved) {
  const SystrapFeatures f = ProbeSystrapFeatures();
  if ((f.xfeatures & 0xe0) != 0xe0) GTEST_SKIP() << "no AVX-512 state";
  uint32_t a, b, c, d;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0xd), "c"(6));
  size_t zmm_hi_off = b;  // ZMM_Hi256 component offset
  // vmovdqa64 %zmm0,%zmm1 (62 f1 fd 48 6f c8); syscall
  Code({0x62, 0xf1, 0xfd, 0x48, 0x6f, 0xc8, 0x0f, 0x05});
  CpuState s = Start();
  s.fp.assign(platform_->FpStateSize(), 0);
  uint32_t mxcsr = 0x1f80;
  memcpy(s.fp.data() + 24, &mxcsr, 4);
  uint64_t bv = 0xe7;
  memcpy(s.fp.data() + 512, &bv, 8);
  for (int i = 0; i < 32; ++i) s.fp[zmm_hi_off + i] = 0x40 + i;  // zmm0 hi
  s.fp_changed = true;
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  ctx_->SyncFp(s);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(s.fp[zmm_hi_off + 32 + i], 0x40 + i) << i;  // zmm1 hi
  }
}

TEST_F(SystrapTest, ManyThreadsInOneAddressSpace) {
  // loop: syscall; jmp loop
  Code({0x0f, 0x05, 0xeb, 0xfc});
  constexpr int kThreads = 4;
  constexpr int kIters = 300;
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&, i] {
      auto ctx = platform_->NewContext();
      if (!ctx.ok()) return;
      CpuState s = Start();
      s.regs.rdi = i;
      for (int n = 0; n < kIters; ++n) {
        s.regs.rax = 1000 + n;
        SwitchResult r = (*ctx)->Switch(*as_, s);
        if (r.reason != SwitchReason::kSyscall) return;
        if (s.regs.orig_rax != static_cast<uint64_t>(1000 + n) ||
            s.regs.rdi != static_cast<uint64_t>(i)) {
          return;
        }
      }
      ok++;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), kThreads);
}

// Address spaces made, used and destroyed from several threads at once,
// each with two contexts.
TEST_F(SystrapTest, ConcurrentAddressSpaces) {
  Code({0x0f, 0x05, 0xeb, 0xfc});
  constexpr int kThreads = 4;
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&, i] {
      for (int round = 0; round < 5; ++round) {
        auto as = platform_->NewAddressSpace();
        if (!as.ok()) return;
        if (!(*as)
                 ->MapFile(kCode, code_off_, kPage, PROT_READ | PROT_EXEC)
                 .ok()) {
          return;
        }
        auto c1 = platform_->NewContext();
        auto c2 = platform_->NewContext();
        CpuState s1 = Start(), s2 = Start();
        for (int n = 0; n < 20; ++n) {
          s1.regs.rax = i * 1000 + n;
          s2.regs.rax = i * 1000 + n + 500;
          if ((*c1)->Switch(**as, s1).reason != SwitchReason::kSyscall ||
              (*c2)->Switch(**as, s2).reason != SwitchReason::kSyscall ||
              s1.regs.orig_rax != static_cast<uint64_t>(i * 1000 + n) ||
              s2.regs.orig_rax != static_cast<uint64_t>(i * 1000 + n + 500)) {
            return;
          }
        }
      }
      ok++;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), kThreads);
}

// A stub holds exactly the memory file and the write end of its reply pipe
// (at the number its process filter lets the syscall thread write to),
// whose read end only the Sentry holds.
// The fdinfo flags of `fd` in process `pid`.
unsigned FdFlags(pid_t pid, int fd) {
  std::ifstream info("/proc/" + std::to_string(pid) + "/fdinfo/" +
                     std::to_string(fd));
  std::string line;
  unsigned flags = 0;
  while (std::getline(info, line)) {
    if (line.rfind("flags:", 0) == 0) flags = std::stoul(line.substr(6), 0, 8);
  }
  return flags;
}

TEST_F(SystrapTest, StubHoldsOnlyTheMemoryFileAndItsPipes) {
  Code({0x0f, 0x05});
  CpuState s = Start();
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  pid_t pid = SystrapStubPid(*as_);
  std::map<int, std::string> fds = Fds(pid);
  ASSERT_EQ(fds.size(), 3u) << ::testing::PrintToString(fds);
  const int memfd = platform_->memory_file().fd();
  const int reply = Params(*platform_).reply_fd;
  const int data = Params(*platform_).data_fd;
  ASSERT_NE(memfd, reply);
  ASSERT_NE(memfd, data);
  ASSERT_NE(reply, data);
  ASSERT_TRUE(fds.count(memfd)) << ::testing::PrintToString(fds);
  EXPECT_NE(fds[memfd].find("memfd:sandbox-memory"), std::string::npos)
      << fds[memfd];
  ASSERT_TRUE(fds.count(reply)) << ::testing::PrintToString(fds);
  ASSERT_TRUE(fds.count(data)) << ::testing::PrintToString(fds);
  const std::string pipe = fds[reply];
  ASSERT_EQ(pipe.rfind("pipe:[", 0), 0u) << pipe;
  // The reply pipe: write-only, packet mode; the data pipe: read-only,
  // non-blocking (a guest thread that reads it can never block the stub).
  unsigned flags = FdFlags(pid, reply);
  EXPECT_EQ(flags & O_ACCMODE, static_cast<unsigned>(O_WRONLY)) << flags;
  EXPECT_NE(flags & O_DIRECT, 0u) << flags;
  flags = FdFlags(pid, data);
  EXPECT_EQ(flags & O_ACCMODE, static_cast<unsigned>(O_RDONLY)) << flags;
  EXPECT_NE(flags & O_NONBLOCK, 0u) << flags;
  ASSERT_EQ(fds[data].rfind("pipe:[", 0), 0u) << fds[data];
  ASSERT_NE(fds[data], pipe);
  // The reply pipe's other end is ours; the data pipe's two ends too; the
  // source stub holds no end of either.
  int ours = 0, ours_data = 0;
  for (const auto& [fd, target] : Fds(getpid())) {
    ours += target == pipe;
    ours_data += target == fds[data];
  }
  EXPECT_EQ(ours, 1);
  EXPECT_EQ(ours_data, 2);
}

// Guest-side copies need a second CPU for the stub to spin on.
class GuestCopyTest : public SystrapTest {
 protected:
  void SetUp() override {
    if (ProbeSystrapFeatures().cpus < 2) {
      GTEST_SKIP() << "needs two CPUs: the stub spins on the other one";
    }
    SystrapTest::SetUp();
  }
  // An unlinked host file holding `data`, or -1.
  static int HostFile(const std::vector<uint8_t>& data) {
    char path[] = "/tmp/guest_copy_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    unlink(path);
    if (pwrite(fd, data.data(), data.size(), 0) !=
        static_cast<ssize_t>(data.size())) {
      close(fd);
      return -1;
    }
    return fd;
  }
};

// A guest-side copy (platform/guest_copy.h): the stub thread, spinning on
// another CPU while the Sentry serves its request, reads the bytes the
// Sentry queued into the guest's buffer; at the end of the file fewer are
// queued. Only possible with a free CPU for the stub to spin on.
TEST_F(GuestCopyTest, GuestSideCopyFillsTheGuestBuffer) {
  constexpr size_t kFile = 3 << 20, kLen = 1 << 20;
  std::vector<uint8_t> data(kFile);
  for (size_t i = 0; i < kFile; ++i)
    data[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  const int fd = HostFile(data);
  ASSERT_GE(fd, 0);
  constexpr uintptr_t kBuf = 0x10000000;
  const uint64_t buf_off = Alloc(2 * kLen);
  ASSERT_TRUE(
      as_->MapFile(kBuf, buf_off, 2 * kLen, PROT_READ | PROT_WRITE).ok());
  MemoryFile& mf = platform_->memory_file();
  ASSERT_TRUE(mf.Zero(buf_off, 2 * kLen));
  Code({0x0f, 0x05, 0xeb, 0xfc});  // 1: syscall; jmp 1b
  CpuState s = Start();
  struct Want {
    uint64_t file_off;
    size_t expect;
  } wants[] = {{4096, kLen}, {kFile - 1000, 1000}};
  for (const Want& w : wants) {
    size_t queued = 0, got = 0;
    for (int attempt = 0; attempt < 500 && got == 0; ++attempt) {
      ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
      // Long work: the stub spins (on the other CPU from the next request
      // on) instead of sleeping.
      HintLongWork();
      GuestCopier* c = CurrentGuestCopier();
      ASSERT_NE(c, nullptr);
      queued = c->Start(fd, w.file_off, kBuf + 8192, kLen);
      if (queued == 0) continue;
      EXPECT_EQ(queued, w.expect);
      got = c->Finish();
      EXPECT_LE(got, queued);
    }
    if (got == 0) GTEST_SKIP() << "the stub never took a copy (no idle CPU)";
    ASSERT_EQ(got, w.expect);
    std::vector<uint8_t> back(2 * kLen);
    ASSERT_TRUE(mf.Read(buf_off, back.data(), back.size()));
    EXPECT_EQ(memcmp(back.data() + 8192, data.data() + w.file_off, got), 0);
    for (size_t i = 0; i < 8192; ++i) ASSERT_EQ(back[i], 0) << i;
    for (size_t i = 8192 + got; i < back.size(); ++i) {
      ASSERT_EQ(back[i], 0) << i;
    }
    ASSERT_TRUE(mf.Zero(buf_off, 2 * kLen));
  }
  close(fd);
}

// A copy the stub could not make (its destination is not mapped: the read
// fails with EFAULT) comes back empty, and leaves the pipe empty: the next
// copy gets its own bytes, not the leftovers.
TEST_F(GuestCopyTest, FailedGuestSideCopyLeavesNothingBehind) {
  constexpr size_t kLen = 256 * 1024;
  std::vector<uint8_t> data(2 * kLen);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i / 3);
  const int fd = HostFile(data);
  ASSERT_GE(fd, 0);
  constexpr uintptr_t kBuf = 0x10000000;
  const uint64_t buf_off = Alloc(kLen);
  ASSERT_TRUE(as_->MapFile(kBuf, buf_off, kLen, PROT_READ | PROT_WRITE).ok());
  MemoryFile& mf = platform_->memory_file();
  ASSERT_TRUE(mf.Zero(buf_off, kLen));
  Code({0x0f, 0x05, 0xeb, 0xfc});  // 1: syscall; jmp 1b
  CpuState s = Start();
  bool failed_once = false, done = false;
  for (int attempt = 0; attempt < 500 && !done; ++attempt) {
    ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
    HintLongWork();
    GuestCopier* c = CurrentGuestCopier();
    ASSERT_NE(c, nullptr);
    if (!failed_once) {
      // Into the hole: nothing is copied; the queued bytes are drained.
      size_t q = c->Start(fd, 0, kHole, kLen);
      if (q == 0) continue;
      EXPECT_EQ(c->Finish(), 0u);
      failed_once = true;
      continue;
    }
    size_t q = c->Start(fd, kLen, kBuf, kLen);
    if (q == 0) continue;
    ASSERT_EQ(q, kLen);
    size_t got = c->Finish();
    if (got == 0) continue;  // the stub slept: withdrawn, try again
    ASSERT_EQ(got, kLen);
    done = true;
  }
  if (!done) GTEST_SKIP() << "the stub never took a copy (no idle CPU)";
  std::vector<uint8_t> back(kLen);
  ASSERT_TRUE(mf.Read(buf_off, back.data(), kLen));
  EXPECT_EQ(memcmp(back.data(), data.data() + kLen, kLen), 0);
  close(fd);
}

// Waits (bounded) until every thread of `pid` is in the stopped state:
// kill(SIGSTOP) returns before a thread running on another CPU has stopped.
bool WaitAllThreadsStopped(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (int i = 0; i < 2000; ++i) {
    bool all = true;
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return false;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(dir + "/" + e->d_name + "/stat");
      std::string line;
      std::getline(f, line);
      size_t paren = line.rfind(')');
      if (paren == std::string::npos || paren + 2 >= line.size() ||
          line[paren + 2] != 'T') {
        all = false;
      }
    }
    closedir(d);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return false;
}

// A copy the stub does not report in time (here: the stub process is
// stopped; a guest thread forging the slot's words looks the same to the
// Sentry) is withdrawn after a bounded wait, and that stub makes no more.
TEST_F(GuestCopyTest, UnreportedGuestSideCopyIsWithdrawnInTime) {
  constexpr size_t kLen = 256 * 1024;
  std::vector<uint8_t> data(kLen, 0x5a);
  const int fd = HostFile(data);
  ASSERT_GE(fd, 0);
  constexpr uintptr_t kBuf = 0x10000000;
  const uint64_t buf_off = Alloc(kLen);
  ASSERT_TRUE(as_->MapFile(kBuf, buf_off, kLen, PROT_READ | PROT_WRITE).ok());
  Code({0x0f, 0x05, 0xeb, 0xfc});  // 1: syscall; jmp 1b
  CpuState s = Start();
  const pid_t stub = SystrapStubPid(*as_);
  bool withdrawn = false;
  for (int attempt = 0; attempt < 500 && !withdrawn; ++attempt) {
    ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
    HintLongWork();
    GuestCopier* c = CurrentGuestCopier();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(kill(stub, SIGSTOP), 0);
    ASSERT_TRUE(WaitAllThreadsStopped(stub));
    const size_t q = c->Start(fd, 0, kBuf, kLen);
    if (q == 0) {  // it was asleep already
      ASSERT_EQ(kill(stub, SIGCONT), 0);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(c->Finish(), 0u);
    const auto waited = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(kill(stub, SIGCONT), 0);
    EXPECT_LT(waited, std::chrono::milliseconds(500));
    withdrawn = true;
    // No more copies for this stub; the guest runs on.
    EXPECT_EQ(c->Start(fd, 0, kBuf, kLen), 0u);
  }
  if (!withdrawn) GTEST_SKIP() << "the stub never spun (no idle CPU)";
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  }
  close(fd);
}

// The stub's address space holds the stub region and the guest's mappings,
// nothing inherited from the Sentry.
TEST_F(SystrapTest, StubAddressSpaceIsClean) {
  Code({0x0f, 0x05});
  CpuState s = Start();
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  pid_t pid = SystrapStubPid(*as_);
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  ASSERT_TRUE(maps.good());
  uintptr_t base = platform_->MaxUserAddress();
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) {
    ++n;
    uintptr_t lo = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    bool guest = lo == kCode || lo == kData;
    bool stub = lo >= base && lo < base + STUB_REGION_SIZE;
    bool vsyscall = line.find("[vsyscall]") != std::string::npos;
    EXPECT_TRUE(guest || stub || vsyscall) << line;
    if (stub) {
      // Nothing of the source stub (control page, stack) survives.
      EXPECT_FALSE(lo >= base + STUB_SOURCE_CTL_OFF &&
                   lo < base + STUB_SOURCE_END)
          << line;
      // Code is r-x; the params block and the request page are read-only
      // (the guest could otherwise steer the stub); nothing else executes.
      std::string perms = line.substr(line.find(' ') + 1, 3);
      if (lo == base + STUB_CODE_OFF) {
        EXPECT_EQ(perms, "r-x") << line;
      } else if (lo == base || lo == base + STUB_REQUEST_OFF) {
        EXPECT_EQ(perms, "r--") << line;
      } else {
        EXPECT_EQ(perms, "rw-") << line;
      }
    }
  }
  EXPECT_GT(n, 3);
}

TEST_F(SystrapTest, HundredAddressSpacesLeaveNothingBehind) {
  Code({0x0f, 0x05});
  // Settle this fixture's own state first.
  CpuState s = Start();
  ASSERT_EQ(ctx_->Switch(*as_, s).reason, SwitchReason::kSyscall);
  std::set<pid_t> before = Children();
  const size_t fds = Fds(getpid()).size();
  uint64_t bytes = platform_->memory_file().AllocatedBytes();
  for (int i = 0; i < 100; ++i) {
    auto as = platform_->NewAddressSpace();
    ASSERT_TRUE(as.ok()) << as.status();
    auto ctx = platform_->NewContext();
    ASSERT_TRUE(ctx.ok());
    ASSERT_TRUE(
        (*as)->MapFile(kCode, code_off_, kPage, PROT_READ | PROT_EXEC).ok());
    ASSERT_TRUE(
        (*as)->MapFile(kData, data_off_, kPage, PROT_READ | PROT_WRITE).ok());
    CpuState s = Start();
    s.regs.rax = i;
    ASSERT_EQ((*ctx)->Switch(**as, s).reason, SwitchReason::kSyscall);
    EXPECT_EQ(s.regs.orig_rax, static_cast<uint64_t>(i));
    pid_t pid = SystrapStubPid(**as);
    EXPECT_TRUE(Children().count(pid));
    ctx->reset();
    as->reset();
    EXPECT_FALSE(Children().count(pid));
  }
  EXPECT_EQ(Children(), before);
  EXPECT_EQ(Fds(getpid()).size(), fds);
  EXPECT_EQ(platform_->memory_file().AllocatedBytes(), bytes);
}

// Without syscall user dispatch every guest syscall reaches the seccomp
// filter, which traps it (SYS_SECCOMP instead of SYS_USER_DISPATCH).
TEST(SystrapPlatformTest, SeccompTrapPathWithoutSud) {
  auto mf = MemoryFile::Create(64 << 20);
  ASSERT_TRUE(mf.ok());
  SystrapOptions opts;
  opts.use_sud = false;
  auto p = NewSystrapPlatform(std::move(*mf), opts);
  ASSERT_TRUE(p.ok()) << p.status();
  Platform& plat = **p;
  auto as = plat.NewAddressSpace();
  auto ctx = plat.NewContext();
  ASSERT_TRUE(as.ok() && ctx.ok());
  uint64_t off = *plat.memory_file().Allocate(kPage);
  uint8_t code[] = {0x0f, 0x05, 0x48, 0x89, 0xc3, 0x0f, 0x05};
  ASSERT_TRUE(plat.memory_file().Write(off, code, sizeof(code)));
  ASSERT_TRUE((*as)->MapFile(kCode, off, kPage, PROT_READ | PROT_EXEC).ok());
  CpuState s;
  s.regs.rip = kCode;
  s.regs.rax = SYS_openat;
  s.regs.rdi = 42;
  ASSERT_EQ((*ctx)->Switch(**as, s).reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.orig_rax, static_cast<uint64_t>(SYS_openat));
  EXPECT_EQ(s.regs.rdi, 42u);
  s.regs.rax = 7;
  ASSERT_EQ((*ctx)->Switch(**as, s).reason, SwitchReason::kSyscall);
  EXPECT_EQ(s.regs.rbx, 7u);
  EXPECT_EQ(s.regs.rip, kCode + 7);
}

// With `spread` the stub thread is bound to another CPU than the Sentry
// thread's while they spin; the round trips stay correct either way, and
// the platform's wait counters add up.
TEST(SystrapPlatformTest, SpreadOptionServesSyscalls) {
  auto mf = MemoryFile::Create(64 << 20);
  ASSERT_TRUE(mf.ok());
  SystrapOptions opts;
  opts.spread = true;
  auto p = NewSystrapPlatform(std::move(*mf), opts);
  ASSERT_TRUE(p.ok()) << p.status();
  Platform& plat = **p;
  auto as = plat.NewAddressSpace();
  auto ctx = plat.NewContext();
  ASSERT_TRUE(as.ok() && ctx.ok());
  uint64_t off = *plat.memory_file().Allocate(kPage);
  uint8_t code[] = {0x0f, 0x05, 0xeb, 0xfc};  // loop: syscall; jmp loop
  ASSERT_TRUE(plat.memory_file().Write(off, code, sizeof(code)));
  ASSERT_TRUE((*as)->MapFile(kCode, off, kPage, PROT_READ | PROT_EXEC).ok());
  CpuState s;
  s.regs.rip = kCode;
  constexpr int kN = 200;
  for (int i = 0; i < kN; ++i) {
    s.regs.rax = 5000 + i;
    ASSERT_EQ((*ctx)->Switch(**as, s).reason, SwitchReason::kSyscall);
    ASSERT_EQ(s.regs.orig_rax, static_cast<uint64_t>(5000 + i));
  }
  SystrapTimings t = TakeSystrapTimings(**ctx);
  EXPECT_EQ(t.handoffs, static_cast<uint64_t>(kN));
  EXPECT_LE(t.spin_hits, t.spins);
  EXPECT_LE(t.spins + t.same_cpu, t.handoffs);
}

TEST(SystrapPlatformTest, DestroyingThePlatformKillsAllStubs) {
  std::set<pid_t> before = Children();
  {
    auto mf = MemoryFile::Create(64 << 20);
    ASSERT_TRUE(mf.ok());
    auto p = NewSystrapPlatform(std::move(*mf));
    ASSERT_TRUE(p.ok()) << p.status();
    auto as = (*p)->NewAddressSpace();
    ASSERT_TRUE(as.ok());
    EXPECT_GT(Children().size(), before.size());
  }
  EXPECT_EQ(Children(), before);
}

}  // namespace
}  // namespace sandbox::platform
