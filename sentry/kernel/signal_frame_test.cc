#include "sentry/kernel/signal_frame.h"

#include <string.h>

#include <vector>

#include "gtest/gtest.h"

namespace sandbox::kernel {
namespace {

// Guest memory: [base, base + size) is mapped; anything else faults.
class FakeMemory : public vfs::UserMemory {
 public:
  FakeMemory(uint64_t base, size_t size) : base_(base), mem_(size, 0xcc) {}
  KResult<void> CopyInFull(uint64_t addr, void* dst, size_t n) override {
    if (!In(addr, n)) return kEFAULT;
    memcpy(dst, mem_.data() + (addr - base_), n);
    return OkResult();
  }
  KResult<void> CopyOutFull(uint64_t addr, const void* src, size_t n) override {
    if (!In(addr, n)) return kEFAULT;
    memcpy(mem_.data() + (addr - base_), src, n);
    return OkResult();
  }
  template <typename T>
  T Get(uint64_t addr) {
    T v;
    EXPECT_TRUE(CopyInFull(addr, &v, sizeof(v)).ok());
    return v;
  }
  template <typename T>
  void Put(uint64_t addr, const T& v) {
    ASSERT_TRUE(CopyOutFull(addr, &v, sizeof(v)).ok());
  }

 private:
  bool In(uint64_t addr, size_t n) const {
    return addr >= base_ && n <= mem_.size() && addr - base_ <= mem_.size() - n;
  }
  uint64_t base_;
  std::vector<uint8_t> mem_;
};

constexpr uint64_t kBase = 0x100000;
constexpr size_t kSize = 0x10000;
constexpr uint64_t kHandler = 0x401000, kRestorer = 0x402000;
// x87 | SSE | AVX, a 832-byte image (AVX state at 576).
const FpuFormat kFpu = {832, 0x7};

user_regs_struct Regs() {
  user_regs_struct r = {};
  r.rax = 1;
  r.rbx = 2;
  r.rcx = 3;
  r.rdx = 4;
  r.rsi = 5;
  r.rdi = 6;
  r.rbp = 7;
  r.r8 = 8;
  r.r15 = 15;
  r.rip = 0x400123;
  r.rsp = kBase + kSize - 0x1003;  // unaligned on purpose
  r.eflags = 0x202 | 0x400;        // IF, DF
  r.cs = kUserCs;
  r.ss = kUserDs;
  r.fs_base = 0x7000;
  r.orig_rax = 0;
  return r;
}

std::vector<uint8_t> FpImage() {
  std::vector<uint8_t> fp = DefaultFpImage(kFpu);
  for (int i = 0; i < 16; ++i) fp[160 + i] = static_cast<uint8_t>(i + 1);
  fp[576] = 0x5a;                // AVX upper half of ymm0
  fp[kXsaveHeaderOffset] = 0x7;  // xstate_bv: x87, SSE, AVX
  return fp;
}

FrameRequest Request(const std::vector<uint8_t>* fp) {
  FrameRequest req;
  req.regs = Regs();
  req.fp = fp;
  req.fpu = kFpu;
  req.action = {kHandler, SA_SIGINFO | kSaRestorer, kRestorer, SigBit(SIGUSR2)};
  memset(&req.info, 0, sizeof(req.info));
  req.info.si_signo = SIGUSR1;
  req.info.si_code = SI_USER;
  req.info.si_pid = 42;
  req.saved_mask = SigBit(SIGHUP);
  return req;
}

TEST(SignalFrameTest, LayoutAsLinux) {
  FakeMemory mem(kBase, kSize);
  std::vector<uint8_t> fp = FpImage();
  FrameRequest req = Request(&fp);
  auto r = SetupSignalFrame(mem, req);
  ASSERT_TRUE(r.ok());
  const uint64_t sp = r->regs.rsp;
  // As after a call: rsp + 8 is 16-byte aligned; below the red zone.
  EXPECT_EQ((sp + 8) % 16, 0u);
  EXPECT_LT(sp + sizeof(RtSigframe), req.regs.rsp - 128);
  EXPECT_EQ(r->regs.rip, kHandler);
  EXPECT_EQ(r->regs.rdi, uint64_t{SIGUSR1});
  EXPECT_EQ(r->regs.rsi, sp + 8 + sizeof(UContext));
  EXPECT_EQ(r->regs.rdx, sp + 8);
  EXPECT_EQ(r->regs.rax, 0u);
  EXPECT_EQ(r->regs.eflags & 0x400, 0u);  // DF cleared
  EXPECT_EQ(r->regs.fs_base, 0x7000u);

  auto f = mem.Get<RtSigframe>(sp);
  EXPECT_EQ(f.pretcode, kRestorer);
  EXPECT_EQ(f.uc.uc_flags, kUcFpXstate | kUcSigcontextSs | kUcStrictRestoreSs);
  EXPECT_EQ(f.uc.uc_link, 0u);
  EXPECT_EQ(f.uc.uc_stack.ss_flags, kSsDisable);
  EXPECT_EQ(f.uc.uc_sigmask, SigBit(SIGHUP));
  const SigContext& sc = f.uc.uc_mcontext;
  EXPECT_EQ(sc.rax, 1u);
  EXPECT_EQ(sc.rdi, 6u);
  EXPECT_EQ(sc.r15, 15u);
  EXPECT_EQ(sc.rip, 0x400123u);
  EXPECT_EQ(sc.rsp, req.regs.rsp);
  EXPECT_EQ(sc.eflags, req.regs.eflags);
  EXPECT_EQ(sc.cs, kUserCs);
  EXPECT_EQ(sc.ss, kUserDs);
  EXPECT_EQ(sc.oldmask, SigBit(SIGHUP));
  EXPECT_EQ(f.info.si_signo, SIGUSR1);
  EXPECT_EQ(f.info.kill.pid, 42);

  // The XSAVE image: 64-byte aligned above the frame, with the software
  // bytes and the second magic glibc and Linux check.
  const uint64_t x = sc.fpstate;
  EXPECT_EQ(x % 64, 0u);
  EXPECT_GE(x, sp + sizeof(RtSigframe));
  EXPECT_EQ(mem.Get<uint32_t>(x + kXsaveSwReservedOffset), kFpXstateMagic1);
  EXPECT_EQ(mem.Get<uint32_t>(x + kXsaveSwReservedOffset + 4), 832u + 4);
  EXPECT_EQ(mem.Get<uint64_t>(x + kXsaveSwReservedOffset + 8), 0x7u);
  EXPECT_EQ(mem.Get<uint32_t>(x + kXsaveSwReservedOffset + 16), 832u);
  EXPECT_EQ(mem.Get<uint32_t>(x + 832), kFpXstateMagic2);
  EXPECT_EQ(mem.Get<uint64_t>(x + kXsaveHeaderOffset), 0x7u);
  EXPECT_EQ(mem.Get<uint8_t>(x + 160), 1);
  EXPECT_EQ(mem.Get<uint8_t>(x + 576), 0x5a);
}

TEST(SignalFrameTest, SigreturnRestoresWhatTheFrameHolds) {
  FakeMemory mem(kBase, kSize);
  std::vector<uint8_t> fp = FpImage();
  FrameRequest req = Request(&fp);
  auto r = SetupSignalFrame(mem, req);
  ASSERT_TRUE(r.ok());
  // The handler changes a register and an xmm value in the frame, then
  // returns: ret pops pretcode.
  const uint64_t uc = r->regs.rsp + 8;
  mem.Put<uint64_t>(
      uc + offsetof(UContext, uc_mcontext) + offsetof(SigContext, rbx), 77);
  user_regs_struct cur = r->regs;
  cur.rsp = uc;
  cur.rax = 15;  // __NR_rt_sigreturn
  auto s = ReadSignalFrame(mem, cur, kFpu);
  ASSERT_TRUE(s.ok());
  user_regs_struct want = req.regs;
  want.rbx = 77;
  want.orig_rax = ~uint64_t{0};
  EXPECT_EQ(memcmp(&s->regs, &want, sizeof(want)), 0);
  EXPECT_EQ(s->mask, SigBit(SIGHUP));
  ASSERT_EQ(s->fp.size(), kFpu.size);
  EXPECT_EQ(memcmp(s->fp.data(), fp.data(), kXsaveSwReservedOffset), 0);
  EXPECT_EQ(memcmp(s->fp.data() + 512, fp.data() + 512, kFpu.size - 512), 0);
}

TEST(SignalFrameTest, HostileFrameIsSanitisedOrRefused) {
  FakeMemory mem(kBase, kSize);
  std::vector<uint8_t> fp = FpImage();
  auto r = SetupSignalFrame(mem, Request(&fp));
  ASSERT_TRUE(r.ok());
  const uint64_t uc = r->regs.rsp + 8;
  const uint64_t sc = uc + offsetof(UContext, uc_mcontext);
  const uint64_t x = mem.Get<uint64_t>(sc + offsetof(SigContext, fpstate));
  user_regs_struct cur = r->regs;
  cur.rsp = uc;
  // 32-bit code segment, IOPL 3, IF cleared, VM: none of it sticks.
  mem.Put<uint16_t>(sc + offsetof(SigContext, cs), 0x23);
  mem.Put<uint16_t>(sc + offsetof(SigContext, ss), 0x10);
  mem.Put<uint64_t>(sc + offsetof(SigContext, eflags), 0x23000 | 0x1 | 0x400);
  auto s = ReadSignalFrame(mem, cur, kFpu);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->regs.cs, kUserCs);
  EXPECT_EQ(s->regs.ss, kUserDs);
  EXPECT_EQ(s->regs.eflags, (cur.eflags & ~uint64_t{0x50dd5}) | 0x401);

  // A state component the CPU does not have: XRSTOR would fault.
  mem.Put<uint64_t>(x + kXsaveHeaderOffset, 0x7 | (1u << 9));
  EXPECT_EQ(ReadSignalFrame(mem, cur, kFpu).error(), kEFAULT);
  // A compacted header.
  mem.Put<uint64_t>(x + kXsaveHeaderOffset, 0x7);
  mem.Put<uint64_t>(x + kXsaveHeaderOffset + 8, uint64_t{1} << 63);
  EXPECT_EQ(ReadSignalFrame(mem, cur, kFpu).error(), kEFAULT);
  mem.Put<uint64_t>(x + kXsaveHeaderOffset + 8, 0);
  // Reserved MXCSR bits.
  mem.Put<uint32_t>(x + 24, 0x10000 | 0x1f80);
  EXPECT_EQ(ReadSignalFrame(mem, cur, kFpu).error(), kEFAULT);
  mem.Put<uint32_t>(x + 24, 0x1f80);
  // Features the frame does not declare start in their initial state.
  mem.Put<uint64_t>(x + kXsaveSwReservedOffset + 8, 0x3);
  s = ReadSignalFrame(mem, cur, kFpu);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fp[kXsaveHeaderOffset], 0x3);
  // Without the magic: the legacy (FXSAVE) area only.
  mem.Put<uint32_t>(x + kXsaveSwReservedOffset, 0);
  s = ReadSignalFrame(mem, cur, kFpu);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fp[kXsaveHeaderOffset], 0x3);
  EXPECT_EQ(s->fp[576], 0);
  EXPECT_EQ(s->fp[160], 1);
  // Misaligned for FXRSTOR.
  mem.Put<uint64_t>(sc + offsetof(SigContext, fpstate), x + 8);
  EXPECT_EQ(ReadSignalFrame(mem, cur, kFpu).error(), kEFAULT);
  // No FPU state at all: the reset state.
  mem.Put<uint64_t>(sc + offsetof(SigContext, fpstate), 0);
  s = ReadSignalFrame(mem, cur, kFpu);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->fp.empty());
  // A frame outside memory.
  cur.rsp = 0x1000;
  EXPECT_EQ(ReadSignalFrame(mem, cur, kFpu).error(), kEFAULT);
}

TEST(SignalFrameTest, AlternateStack) {
  FakeMemory mem(kBase, kSize);
  FrameRequest req = Request(nullptr);
  req.action.flags |= SA_ONSTACK;
  req.alt = {kBase + 0x1000, 0, 0x3000};
  auto r = SetupSignalFrame(mem, req);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->regs.rsp, req.alt.sp);
  EXPECT_LT(r->regs.rsp, req.alt.sp + req.alt.size);
  auto f = mem.Get<RtSigframe>(r->regs.rsp);
  EXPECT_EQ(f.uc.uc_stack.ss_sp, req.alt.sp);
  EXPECT_EQ(f.uc.uc_stack.ss_size, req.alt.size);
  EXPECT_FALSE(r->disarm_alt_stack);
  // A nested signal on the alternate stack stays on it, below the frame.
  FrameRequest nested = req;
  nested.regs = r->regs;
  auto r2 = SetupSignalFrame(mem, nested);
  ASSERT_TRUE(r2.ok());
  EXPECT_LT(r2->regs.rsp, r->regs.rsp);
  EXPECT_GT(r2->regs.rsp, req.alt.sp);
  // Too small for a frame: refused (the caller forces SIGSEGV).
  req.alt = {kBase + 0x1000, 0, 0x400};
  EXPECT_EQ(SetupSignalFrame(mem, req).error(), kEFAULT);
  // SS_AUTODISARM: the stack is disarmed once used.
  req.alt = {kBase + 0x1000, kSsAutodisarm, 0x3000};
  r = SetupSignalFrame(mem, req);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->disarm_alt_stack);
}

TEST(SignalFrameTest, RefusedWithoutRestorerOrMemory) {
  FakeMemory mem(kBase, kSize);
  FrameRequest req = Request(nullptr);
  req.action.flags &= ~kSaRestorer;
  EXPECT_EQ(SetupSignalFrame(mem, req).error(), kEFAULT);
  req = Request(nullptr);
  req.regs.rsp = kBase + 0x100;  // the frame would go below the mapping
  EXPECT_EQ(SetupSignalFrame(mem, req).error(), kEFAULT);
}

TEST(SignalFrameTest, AltStackRules) {
  AltStack alt;
  EXPECT_EQ(AltStackState(alt, 0x5000), kSsDisable);
  EXPECT_EQ(SetAltStack(alt, StackT{0x1000, 0, 0, 100}, 0x9000).error(),
            kENOMEM);
  EXPECT_EQ(SetAltStack(alt, StackT{0x1000, 5, 0, 0x4000}, 0x9000).error(),
            kEINVAL);
  ASSERT_TRUE(SetAltStack(alt, StackT{0x1000, 0, 0, 0x4000}, 0x9000).ok());
  EXPECT_EQ(AltStackForUser(alt, 0x2000).ss_flags, kSsOnstack);
  EXPECT_EQ(AltStackForUser(alt, 0x9000).ss_flags, 0);
  // Not while running on it.
  EXPECT_EQ(SetAltStack(alt, StackT{0, kSsDisable, 0, 0}, 0x2000).error(),
            kEPERM);
  ASSERT_TRUE(SetAltStack(alt, StackT{0, kSsDisable, 0, 0}, 0x9000).ok());
  EXPECT_EQ(AltStackForUser(alt, 0x2000).ss_flags, kSsDisable);
}

}  // namespace
}  // namespace sandbox::kernel
