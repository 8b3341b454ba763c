// The x86-64 signal frame (arch/x86/kernel/signal_64.c): what a handler
// finds on its stack, and how rt_sigreturn reads it back.
//
// Layout, from the handler's rsp upwards (struct rt_sigframe):
//   pretcode (sa_restorer) | ucontext (uc_flags, uc_link, uc_stack,
//   sigcontext, uc_sigmask) | siginfo
// and above it, 64-byte aligned, the XSAVE image with the fpx_sw_bytes in
// its software-reserved bytes (magic1, sizes, features) and FP_XSTATE_MAGIC2
// after it, as Linux's copy_fpstate_to_sigframe writes it, so glibc (and
// anything that walks the frame) accepts it.
//
// Both directions are pure functions over registers, the XSAVE image and a
// vfs::UserMemory, so they are unit-tested without a platform. The frame
// read back is hostile input: registers and the XSAVE image are validated
// and sanitised as Linux's restore_sigcontext and fpu__restore_sig do.
#ifndef SENTRY_KERNEL_SIGNAL_FRAME_H_
#define SENTRY_KERNEL_SIGNAL_FRAME_H_

#include <signal.h>
#include <stdint.h>
#include <sys/user.h>

#include <vector>

#include "sentry/abi/linux.h"
#include "sentry/abi/siginfo.h"
#include "sentry/base/result.h"
#include "sentry/kernel/signal_queue.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::kernel {

// struct sigcontext (uapi asm/sigcontext.h, 64-bit).
struct SigContext {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
  uint16_t cs, gs, fs, ss;
  uint64_t err, trapno, oldmask, cr2;
  uint64_t fpstate;  // guest address of the XSAVE image, 0 if none
  uint64_t reserved1[8];
};
static_assert(sizeof(SigContext) == 256);

// stack_t.
struct StackT {
  uint64_t ss_sp;
  int32_t ss_flags;
  int32_t pad;
  uint64_t ss_size;
};
static_assert(sizeof(StackT) == 24);

// struct ucontext as the kernel writes it (64-bit sigset).
struct UContext {
  uint64_t uc_flags;
  uint64_t uc_link;
  StackT uc_stack;
  SigContext uc_mcontext;
  uint64_t uc_sigmask;
};
static_assert(sizeof(UContext) == 304);

struct RtSigframe {
  uint64_t pretcode;
  UContext uc;
  abi::Siginfo info;
};
// The kernel keeps glibc's siginfo_t, which is the ABI's layout
// (sentry/abi/linux_test.cc checks it field by field).
static_assert(sizeof(siginfo_t) == sizeof(abi::Siginfo));
static_assert(sizeof(RtSigframe) == 440);

inline constexpr uint64_t kUcFpXstate = 0x1;
inline constexpr uint64_t kUcSigcontextSs = 0x2;
inline constexpr uint64_t kUcStrictRestoreSs = 0x4;
inline constexpr uint32_t kFpXstateMagic1 = 0x46505853;
inline constexpr uint32_t kFpXstateMagic2 = 0x46505845;
// Offsets in the XSAVE image.
inline constexpr size_t kXsaveSwReservedOffset = 464;
inline constexpr size_t kXsaveHeaderOffset = 512;
inline constexpr size_t kXsaveMinSize = 576;  // legacy area + header
inline constexpr uint64_t kXfeatureFpSse = 0x3;
inline constexpr uint16_t kUserCs = 0x33;
inline constexpr uint16_t kUserDs = 0x2b;

// sa_flags bits glibc's <signal.h> does not name.
inline constexpr uint64_t kSaRestorer = 0x04000000;

inline constexpr int32_t kSsOnstack = 1;
inline constexpr int32_t kSsDisable = 2;
inline constexpr int32_t kSsAutodisarm = int32_t(1u << 31);
inline constexpr uint64_t kMinSigStackSize = 2048;  // MINSIGSTKSZ

// A task's alternate signal stack (sigaltstack(2)): Linux's sas_ss_sp,
// sas_ss_size and sas_ss_flags (the flags as the guest set them; size 0
// means disabled).
struct AltStack {
  uint64_t sp = 0;
  int32_t flags = kSsDisable;
  uint64_t size = 0;
};

// on_sig_stack: whether `sp` is on the alternate stack (never with
// SS_AUTODISARM).
bool OnAltStack(const AltStack& alt, uint64_t sp);
// sas_ss_flags: SS_DISABLE, SS_ONSTACK or 0.
int32_t AltStackState(const AltStack& alt, uint64_t sp);
// sigaltstack(2)'s read side: {sp, sas_ss_flags | SS_AUTODISARM bit, size}.
StackT AltStackForUser(const AltStack& alt, uint64_t sp);
// do_sigaltstack's set side for a task whose stack pointer is `sp`: EPERM
// while on the stack, EINVAL for a bad mode, ENOMEM below MINSIGSTKSZ.
KResult<void> SetAltStack(AltStack& alt, const StackT& ss, uint64_t sp);

// The platform's FPU state format.
struct FpuFormat {
  size_t size = 0;         // user XSAVE image size (CPUID 0xD: EBX)
  uint64_t xfeatures = 0;  // XCR0 features the guest may use
};

// A default (reset) XSAVE image of `fmt.size` bytes: FCW 0x37f, MXCSR
// 0x1f80, every component in its initial state.
std::vector<uint8_t> DefaultFpImage(const FpuFormat& fmt);

struct FrameRequest {
  user_regs_struct regs;  // the interrupted registers (after restart fixups)
  // The current XSAVE image; empty = default state.
  const std::vector<uint8_t>* fp = nullptr;
  FpuFormat fpu;
  AltStack alt;
  abi::KernelSigaction action;
  siginfo_t info;
  SigSet saved_mask;  // the mask sigreturn restores (uc_sigmask)
  // Fault details for sigcontext (0 unless a fault).
  uint64_t cr2 = 0, err = 0, trapno = 0;
};

struct FrameResult {
  // The registers the handler starts with.
  user_regs_struct regs;
  // SS_AUTODISARM: the alternate stack is reset once the frame is written.
  bool disarm_alt_stack = false;
};

// setup_rt_frame: writes the frame through `mem` and returns the handler's
// registers. EFAULT when the frame cannot be written (or would overflow the
// alternate stack, or sa_restorer is missing: x86-64 requires
// SA_RESTORER): the caller forces SIGSEGV.
KResult<FrameResult> SetupSignalFrame(vfs::UserMemory& mem,
                                      const FrameRequest& req);

struct SigreturnResult {
  user_regs_struct regs;
  // The new XSAVE image (sanitised, `fpu.size` bytes); empty = reset state.
  std::vector<uint8_t> fp;
  SigSet mask = 0;
  StackT uc_stack = {};
};

// rt_sigreturn: reads the frame whose ucontext sits at `rsp` (the
// handler's return popped pretcode) and validates it: CS/SS forced to the
// 64-bit user selectors, only the user-changeable RFLAGS bits taken,
// orig_rax = -1, the XSAVE image checked as XRSTOR would (else EFAULT:
// SIGSEGV) and its features limited to what the frame declares.
// `cur` gives the registers the frame does not carry (fs/gs base).
KResult<SigreturnResult> ReadSignalFrame(vfs::UserMemory& mem,
                                         const user_regs_struct& cur,
                                         const FpuFormat& fpu);

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_SIGNAL_FRAME_H_
