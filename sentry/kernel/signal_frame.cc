#include "sentry/kernel/signal_frame.h"

#include <string.h>

#include <algorithm>

namespace sandbox::kernel {
namespace {

// RFLAGS bits a frame may change (Linux's FIX_EFLAGS): AC OF DF TF SF ZF
// AF PF CF RF.
constexpr uint64_t kFixEflags =
    0x40000 | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000;
constexpr uint64_t kEflagsDf = 0x400, kEflagsRf = 0x10000, kEflagsTf = 0x100;
constexpr size_t kRedZone = 128;

// struct _fpx_sw_bytes, at kXsaveSwReservedOffset.
struct FpxSwBytes {
  uint32_t magic1;
  uint32_t extended_size;
  uint64_t xfeatures;
  uint32_t xstate_size;
  uint32_t padding[7];
};
static_assert(sizeof(FpxSwBytes) == 48);

template <typename T>
T Load(const uint8_t* p) {
  T v;
  memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void StoreAt(uint8_t* p, T v) {
  memcpy(p, &v, sizeof(T));
}

}  // namespace

bool OnAltStack(const AltStack& alt, uint64_t sp) {
  if (alt.flags & kSsAutodisarm) return false;
  return sp > alt.sp && sp - alt.sp <= alt.size;
}

int32_t AltStackState(const AltStack& alt, uint64_t sp) {
  if (alt.size == 0) return kSsDisable;
  return OnAltStack(alt, sp) ? kSsOnstack : 0;
}

StackT AltStackForUser(const AltStack& alt, uint64_t sp) {
  return StackT{alt.sp, AltStackState(alt, sp) | (alt.flags & kSsAutodisarm), 0,
                alt.size};
}

KResult<void> SetAltStack(AltStack& alt, const StackT& ss, uint64_t sp) {
  if (OnAltStack(alt, sp)) return kEPERM;
  const int32_t mode = ss.ss_flags & ~kSsAutodisarm;
  if (mode != kSsDisable && mode != kSsOnstack && mode != 0) return kEINVAL;
  if (mode == kSsDisable) {
    alt = AltStack{0, ss.ss_flags, 0};
    return OkResult();
  }
  if (ss.ss_size < kMinSigStackSize) return kENOMEM;
  alt = AltStack{ss.ss_sp, ss.ss_flags, ss.ss_size};
  return OkResult();
}

std::vector<uint8_t> DefaultFpImage(const FpuFormat& fmt) {
  std::vector<uint8_t> img(std::max(fmt.size, size_t{512}), 0);
  StoreAt<uint16_t>(img.data(), 0x37f);        // FCW
  StoreAt<uint32_t>(img.data() + 24, 0x1f80);  // MXCSR
  return img;
}

KResult<FrameResult> SetupSignalFrame(vfs::UserMemory& mem,
                                      const FrameRequest& req) {
  const user_regs_struct& regs = req.regs;
  const abi::KernelSigaction& act = req.action;
  // x86-64 should always use kSaRestorer (x64_setup_rt_frame).
  if (!(act.flags & kSaRestorer)) return kEFAULT;

  // get_sigframe.
  const bool nested_altstack = OnAltStack(req.alt, regs.rsp);
  bool entering_altstack = false;
  uint64_t sp = regs.rsp - kRedZone;
  if ((act.flags & SA_ONSTACK) && AltStackState(req.alt, sp) == 0) {
    sp = req.alt.sp + req.alt.size;
    entering_altstack = true;
  }
  // fpu__alloc_mathframe: the XSAVE image plus FP_XSTATE_MAGIC2.
  const size_t xsize = std::max(req.fpu.size, kXsaveMinSize);
  const uint64_t math_size = xsize + sizeof(uint32_t);
  const uint64_t buf_fx = (sp - math_size) & ~uint64_t{63};
  sp = buf_fx - sizeof(RtSigframe);
  sp = (sp & ~uint64_t{15}) - 8;
  if ((nested_altstack || entering_altstack) &&
      !OnAltStack(AltStack{req.alt.sp, 0, req.alt.size}, sp)) {
    return kEFAULT;  // Linux returns an always-bogus address: SIGSEGV
  }

  // The XSAVE image with the software bytes (save_xstate_epilog).
  std::vector<uint8_t> fx(math_size, 0);
  if (req.fp != nullptr && !req.fp->empty()) {
    memcpy(fx.data(), req.fp->data(), std::min(req.fp->size(), xsize));
  } else {
    std::vector<uint8_t> def = DefaultFpImage(req.fpu);
    memcpy(fx.data(), def.data(), std::min(def.size(), xsize));
  }
  FpxSwBytes sw = {};
  sw.magic1 = kFpXstateMagic1;
  sw.extended_size = static_cast<uint32_t>(math_size);
  sw.xfeatures = req.fpu.xfeatures;
  sw.xstate_size = static_cast<uint32_t>(xsize);
  memcpy(fx.data() + kXsaveSwReservedOffset, &sw, sizeof(sw));
  uint64_t bv = Load<uint64_t>(fx.data() + kXsaveHeaderOffset);
  StoreAt<uint64_t>(fx.data() + kXsaveHeaderOffset, bv | kXfeatureFpSse);
  StoreAt<uint32_t>(fx.data() + xsize, kFpXstateMagic2);

  RtSigframe f = {};
  f.pretcode = act.restorer;
  f.uc.uc_flags = kUcFpXstate | kUcSigcontextSs | kUcStrictRestoreSs;
  f.uc.uc_link = 0;
  f.uc.uc_stack = StackT{req.alt.sp, req.alt.flags, 0, req.alt.size};
  SigContext& sc = f.uc.uc_mcontext;
  sc.r8 = regs.r8;
  sc.r9 = regs.r9;
  sc.r10 = regs.r10;
  sc.r11 = regs.r11;
  sc.r12 = regs.r12;
  sc.r13 = regs.r13;
  sc.r14 = regs.r14;
  sc.r15 = regs.r15;
  sc.rdi = regs.rdi;
  sc.rsi = regs.rsi;
  sc.rbp = regs.rbp;
  sc.rbx = regs.rbx;
  sc.rdx = regs.rdx;
  sc.rax = regs.rax;
  sc.rcx = regs.rcx;
  sc.rsp = regs.rsp;
  sc.rip = regs.rip;
  sc.eflags = regs.eflags;
  sc.cs = kUserCs;
  sc.gs = 0;
  sc.fs = 0;
  sc.ss = kUserDs;
  sc.err = req.err;
  sc.trapno = req.trapno;
  sc.oldmask = req.saved_mask;
  sc.cr2 = req.cr2;
  sc.fpstate = buf_fx;
  f.uc.uc_sigmask = req.saved_mask;
  if (act.flags & SA_SIGINFO) memcpy(&f.info, &req.info, sizeof(f.info));

  TRY_VOID(mem.CopyOutFull(buf_fx, fx.data(), fx.size()));
  TRY_VOID(mem.CopyOutFull(sp, &f, sizeof(f)));

  FrameResult r;
  r.regs = regs;
  r.regs.rdi = static_cast<uint64_t>(req.info.si_signo);
  r.regs.rax = 0;
  r.regs.rsi = sp + offsetof(RtSigframe, info);
  r.regs.rdx = sp + offsetof(RtSigframe, uc);
  r.regs.rip = act.handler;
  r.regs.rsp = sp;
  r.regs.cs = kUserCs;
  r.regs.ss = kUserDs;
  r.regs.eflags &= ~(kEflagsDf | kEflagsRf | kEflagsTf);
  r.disarm_alt_stack = (req.alt.flags & kSsAutodisarm) != 0;
  return r;
}

namespace {

// fpu__restore_sig for a 64-bit frame: the XSAVE image at `buf` as XRSTOR
// (or FXRSTOR, without valid software bytes) would load it, or EFAULT
// where the CPU would fault (#GP/#PF): the caller sends SIGSEGV.
KResult<std::vector<uint8_t>> ReadFpState(vfs::UserMemory& mem, uint64_t buf,
                                          const FpuFormat& fpu) {
  const size_t xsize = std::max(fpu.size, kXsaveMinSize);
  std::vector<uint8_t> img(xsize, 0);
  TRY_VOID(mem.CopyInFull(buf, img.data(), 512));
  FpxSwBytes sw;
  memcpy(&sw, img.data() + kXsaveSwReservedOffset, sizeof(sw));
  // check_xstate_in_sigframe.
  bool fx_only = true;
  if (sw.magic1 == kFpXstateMagic1 && sw.xstate_size >= kXsaveMinSize &&
      sw.xstate_size <= xsize && sw.xstate_size <= sw.extended_size) {
    TRY(uint32_t magic2, [&]() -> KResult<uint32_t> {
      uint32_t m;
      TRY_VOID(mem.CopyInFull(buf + sw.xstate_size, &m, sizeof(m)));
      return m;
    }());
    fx_only = magic2 != kFpXstateMagic2;
  }
  uint64_t user_xfeatures = kXfeatureFpSse;
  if (fx_only) {
    if (buf % 16 != 0) return kEFAULT;  // FXRSTOR: #GP
    memset(img.data() + kXsaveHeaderOffset, 0, xsize - kXsaveHeaderOffset);
    StoreAt<uint64_t>(img.data() + kXsaveHeaderOffset, kXfeatureFpSse);
  } else {
    if (buf % 64 != 0) return kEFAULT;  // XRSTOR: #GP
    TRY_VOID(mem.CopyInFull(buf + kXsaveHeaderOffset,
                            img.data() + kXsaveHeaderOffset,
                            sw.xstate_size - kXsaveHeaderOffset));
    user_xfeatures = sw.xfeatures;
    // XRSTOR (standard form) faults on a compacted or reserved header and
    // on components the OS has not enabled.
    const uint8_t* hdr = img.data() + kXsaveHeaderOffset;
    const uint64_t bv = Load<uint64_t>(hdr);
    for (size_t i = 8; i < 64; ++i) {
      if (hdr[i] != 0) return kEFAULT;
    }
    if (bv & ~fpu.xfeatures) return kEFAULT;
    // Components the frame does not ask for start in their initial state
    // (__restore_fpregs_from_user's init_bv).
    StoreAt<uint64_t>(img.data() + kXsaveHeaderOffset,
                      bv & user_xfeatures & fpu.xfeatures);
  }
  // Reserved MXCSR bits make (FX)RSTOR fault.
  if (Load<uint32_t>(img.data() + 24) & 0xffff0000u) return kEFAULT;
  // The software bytes are not processor state.
  memset(img.data() + kXsaveSwReservedOffset, 0, sizeof(FpxSwBytes));
  img.resize(fpu.size);
  return img;
}

}  // namespace

KResult<SigreturnResult> ReadSignalFrame(vfs::UserMemory& mem,
                                         const user_regs_struct& cur,
                                         const FpuFormat& fpu) {
  // The handler's ret popped pretcode: the frame starts 8 bytes below.
  const uint64_t frame = cur.rsp - sizeof(uint64_t);
  RtSigframe f;
  TRY_VOID(mem.CopyInFull(frame, &f, offsetof(RtSigframe, info)));
  const SigContext& sc = f.uc.uc_mcontext;
  SigreturnResult r;
  r.regs = cur;
  r.regs.r8 = sc.r8;
  r.regs.r9 = sc.r9;
  r.regs.r10 = sc.r10;
  r.regs.r11 = sc.r11;
  r.regs.r12 = sc.r12;
  r.regs.r13 = sc.r13;
  r.regs.r14 = sc.r14;
  r.regs.r15 = sc.r15;
  r.regs.rdi = sc.rdi;
  r.regs.rsi = sc.rsi;
  r.regs.rbp = sc.rbp;
  r.regs.rbx = sc.rbx;
  r.regs.rdx = sc.rdx;
  r.regs.rax = sc.rax;
  r.regs.rcx = sc.rcx;
  r.regs.rsp = sc.rsp;
  r.regs.rip = sc.rip;
  // Linux ORs in CPL 3; the Sentry runs only 64-bit user code, so the
  // selectors are the 64-bit ones whatever the frame says.
  r.regs.cs = kUserCs;
  r.regs.ss = kUserDs;
  r.regs.ds = r.regs.es = r.regs.fs = r.regs.gs = 0;
  r.regs.eflags = (cur.eflags & ~kFixEflags) | (sc.eflags & kFixEflags);
  r.regs.orig_rax = ~uint64_t{0};  // no syscall restart
  if (sc.fpstate != 0) {
    TRY(r.fp, ReadFpState(mem, sc.fpstate, fpu));
  }
  r.mask = f.uc.uc_sigmask;
  r.uc_stack = f.uc.uc_stack;
  return r;
}

}  // namespace sandbox::kernel
