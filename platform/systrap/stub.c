/* The stub blob: the only code that runs in stub processes besides guest code.
 *
 * Freestanding: no libc, no stack protector (the canary would be read through
 * the guest's %fs), no global data. Every function lives in the section
 * "sandbox_stub", which the Sentry copies to S + STUB_CODE_OFF; code reaches
 * the read-only params block at S through __start_sandbox_stub. The code is
 * position independent (only PC-relative references inside the section); the
 * Sentry refuses to start if the section contains relocations it cannot
 * honour (see platform.cc).
 *
 * Trust: the params block and the request page are read-only here. Slots,
 * result pages and the alternate stacks are writable by every guest thread
 * of the stub, so nothing here relies on them for anything but the guest's
 * own state (and the Sentry's spin hints); the seccomp filters are the
 * boundary. The syscall thread's replies go through the reply pipe, which
 * only it may write to, from the read-only request page.
 */
#include <stddef.h>
#include <stdint.h>

#include "platform/systrap/stub_abi.h"

#define STUB_FN \
  __attribute__((section("sandbox_stub"), used, noinline, visibility("hidden")))
#define INL static inline __attribute__((always_inline))

_Static_assert(offsetof(struct stub_params, code_start) == STUB_P_CODE_START,
               "asm offset");
_Static_assert(offsetof(struct stub_params, code_len) == STUB_P_CODE_LEN,
               "asm offset");
_Static_assert(offsetof(struct stub_params, cpuid_faulting) ==
                   STUB_P_CPUID_FAULTING,
               "asm offset");
_Static_assert(offsetof(struct stub_params, use_sud) == STUB_P_USE_SUD,
               "asm offset");
_Static_assert(offsetof(struct stub_request, guest_filter) ==
                   STUB_REQ_FILTER_OFF,
               "asm offset");
_Static_assert(offsetof(struct stub_params, reply_fd) == STUB_P_REPLY_FD,
               "asm offset");
_Static_assert(offsetof(struct stub_params, stub_base) == 8, "asm offset");
_Static_assert(STUB_REPLY_BITS == 12 && STUB_REPLY_LEN(0) == 1 &&
                   STUB_REPLY_MAX_LEN == STUB_REPLY_LEN(STUB_REPLY_MASK),
               "asm constants");
_Static_assert(STUB_SOURCE_STACK_OFF == 0x11000 &&
                   STUB_SOURCE_STACK_SIZE == 0x8000,
               "asm constants");
_Static_assert(offsetof(struct stub_request, ss_sp) == STUB_REQ_SS_OFF,
               "asm offset");
_Static_assert(offsetof(struct stub_request, sentry_cpu) == STUB_REQ_CPU_OFF &&
                   STUB_REQ_CPU_OFF == 4,
               "asm offset");
_Static_assert(sizeof(struct stub_slot) == STUB_SLOT_HEADER, "slot header");

extern char __start_sandbox_stub[] __attribute__((visibility("hidden")));
_Static_assert(STUB_CODE_OFF == 0x2000, "P() hard-codes the offset");

/* Kernel ABI (x86-64). */
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_fcntl 72
#define NR_sendmsg 46
#define NR_dup3 292
#define NR_pipe2 293
#define NR_rt_sigaction 13
#define NR_rt_sigprocmask 14
#define NR_rt_sigreturn 15
#define NR_sched_yield 24
#define NR_mmap 9
#define NR_munmap 11
#define NR_getppid 110
#define NR_setsid 112
#define NR_sigaltstack 131
#define NR_prctl 157
#define NR_arch_prctl 158
#define NR_futex 202
#define NR_exit_group 231
#define NR_clone 56
#define NR_seccomp 317
#define NR_close_range 436

#define SIGKILL 9
#define SIGSEGV 11
#define SIGCHLD 17
#define SIGSYS 31
#define SI_KERNEL 0x80
#define AUDIT_ARCH_X86_64 0xc000003eu

struct k_sigaction {
  void* handler;
  unsigned long flags;
  void* restorer;
  uint64_t mask;
};

struct k_stack {
  uint64_t ss_sp;
  int32_t ss_flags;
  int32_t pad;
  uint64_t ss_size;
};

struct k_sigcontext {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
  uint16_t cs, gs, fs, ss;
  uint64_t err, trapno, oldmask, cr2;
  uint64_t fpstate;
  uint64_t reserved1[8];
};

struct k_ucontext {
  uint64_t uc_flags;
  uint64_t uc_link;
  struct k_stack uc_stack;
  struct k_sigcontext uc_mcontext;
  uint64_t uc_sigmask;
};

struct k_siginfo {
  int32_t si_signo;
  int32_t si_errno;
  int32_t si_code;
  int32_t pad;
  uint64_t addr; /* si_addr, or si_call_addr for SIGSYS */
  int32_t syscall;
  uint32_t arch;
};

INL long sys6(long n, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#define sys0(n) sys6(n, 0, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) \
  sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* The params block sits STUB_CODE_OFF bytes below the code. */
INL const struct stub_params* P(void) {
  const struct stub_params* p;
  __asm__("lea __start_sandbox_stub-0x2000(%%rip), %0" : "=r"(p));
  return p;
}

INL void copy(void* dst, const void* src, uint64_t n) {
  __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

INL void zero(void* dst, uint64_t n) {
  __asm__ volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(0) : "memory");
}

INL uint32_t load32(const uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
INL uint64_t load64(const uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
INL void store32(uint32_t* p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

INL void futex_wake(uint32_t* p) { sys3(NR_futex, p, 1 /*WAKE*/, 1); }
INL void futex_wait(uint32_t* p, uint32_t v) {
  sys4(NR_futex, p, 0 /*WAIT*/, v, 0);
}

INL uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

INL uintptr_t get_sp(void) {
  uintptr_t sp;
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
  return sp;
}

/* Closes every file descriptor but `a`, `b` and `c` (c may be -1). */
INL void close_all_but(int a, int b, int c) {
  int keep[3] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    for (int j = i + 1; j < 3; j++) {
      if (keep[j] < keep[i]) {
        int t = keep[i];
        keep[i] = keep[j];
        keep[j] = t;
      }
    }
  }
  int next = 0; /* lowest fd not yet handled */
  for (int i = 0; i < 3; i++) {
    if (keep[i] < next) continue; /* -1 or a duplicate */
    if (keep[i] > next) sys3(NR_close_range, next, keep[i] - 1, 0);
    next = keep[i] + 1;
  }
  sys3(NR_close_range, next, ~0u, 0);
}

struct k_iovec {
  void* base;
  uint64_t len;
};

struct k_msghdr {
  void* name;
  int32_t namelen;
  int32_t pad;
  struct k_iovec* iov;
  uint64_t iovlen;
  void* control;
  uint64_t controllen;
  int32_t flags;
  int32_t pad1;
};

struct k_cmsg_fd {
  uint64_t len; /* CMSG_LEN(sizeof(int)) */
  int32_t level;
  int32_t type;
  int32_t fd;
  int32_t pad; /* up to CMSG_SPACE(sizeof(int)) */
};

/* Sends `fd` over the unix socket `sock` (SCM_RIGHTS, one data byte). */
INL long send_fd(int sock, int fd) {
  char byte = 0;
  struct k_iovec iov;
  iov.base = &byte;
  iov.len = 1;
  struct k_cmsg_fd c;
  zero(&c, sizeof(c));
  c.len = 20;
  c.level = 1 /*SOL_SOCKET*/;
  c.type = 1 /*SCM_RIGHTS*/;
  c.fd = fd;
  struct k_msghdr m;
  zero(&m, sizeof(m));
  m.iov = &iov;
  m.iovlen = 1;
  m.control = &c;
  m.controllen = sizeof(c);
  return sys3(NR_sendmsg, sock, &m, 0x4000 /*MSG_NOSIGNAL*/);
}

INL __attribute__((noreturn)) void die(void) {
  /* exit_group from the blob: the guest filter kills the whole stub, which
   * the Sentry reports as dead (the process filter lets the syscall thread
   * exit). The handler blocks no signal, so a fault here would only nest. */
  sys1(NR_exit_group, 127);
  for (;;) __asm__ volatile("ud2");
}

/* The slot of the running thread, found from the stack pointer. A guest can
 * move the alternate stack with a forged rt_sigreturn frame; a stack outside
 * the thread regions' altstacks kills the stub instead of letting the
 * handler write through a guest-chosen pointer. (Inside another thread's
 * altstack the guest only garbles its own threads' states.) */
INL struct stub_slot* slot_from_sp(const struct stub_params* p) {
  uintptr_t sp = get_sp();
  uintptr_t lo = p->stub_base + STUB_THREADS_OFF;
  uintptr_t hi = lo + STUB_MAX_THREADS * p->region_size;
  uintptr_t base = sp & ~(uintptr_t)(p->region_size - 1);
  if (sp < lo || sp >= hi || sp < base + p->altstack_off) die();
  return (struct stub_slot*)(base + p->slot_off);
}

INL uint64_t get_fs(const struct stub_params* p, uint64_t* tmp) {
  if (p->use_fsgsbase) {
    uint64_t v;
    __asm__ volatile("rdfsbase %0" : "=r"(v));
    return v;
  }
  *tmp = 0;
  sys2(NR_arch_prctl, 0x1003 /*ARCH_GET_FS*/, tmp);
  return *tmp;
}

INL uint64_t get_gs(const struct stub_params* p, uint64_t* tmp) {
  if (p->use_fsgsbase) {
    uint64_t v;
    __asm__ volatile("rdgsbase %0" : "=r"(v));
    return v;
  }
  *tmp = 0;
  sys2(NR_arch_prctl, 0x1004 /*ARCH_GET_GS*/, tmp);
  return *tmp;
}

INL void set_fs(const struct stub_params* p, uint64_t v) {
  if (p->use_fsgsbase) {
    __asm__ volatile("wrfsbase %0" ::"r"(v) : "memory");
  } else {
    sys2(NR_arch_prctl, 0x1002 /*ARCH_SET_FS*/, v);
  }
}

INL void set_gs(const struct stub_params* p, uint64_t v) {
  if (p->use_fsgsbase) {
    __asm__ volatile("wrgsbase %0" ::"r"(v) : "memory");
  } else {
    sys2(NR_arch_prctl, 0x1001 /*ARCH_SET_GS*/, v);
  }
}

/* The CPU this thread runs on, from the limit of the per-CPU segment Linux
 * sets up for vgetcpu (selector 0x7b: cpu | node << 12), without a syscall;
 * ~0 if there is none. (RDPID/RDTSCP would be cheaper but report the host's
 * CPU in some VMs.) */
INL uint32_t cur_cpu(void) {
  uint32_t v = 0;
  uint8_t ok;
  __asm__ volatile("lsl %2, %0\n\tsetz %1"
                   : "+r"(v), "=q"(ok)
                   : "r"(0x7bu)
                   : "cc");
  return ok ? (v & 0xfff) : 0xffffffffu;
}

/* Runs the guest-side copy the Sentry queued, if any (stub_abi.h,
 * `assist_*`): reads the data pipe into the guest's buffer through this
 * process's mapping. The pipe is non-blocking, so a guest thread that
 * drained it, or a bad address, only ends the copy short. */
INL void assist(const struct stub_params* p, struct stub_slot* s) {
  uint32_t job = load32(&s->assist_seq);
  if (job == load32(&s->assist_done)) return;
  uint64_t addr = s->assist_addr, len = s->assist_len, got = 0;
  while (got < len) {
    long n = sys3(NR_read, p->data_fd, addr + got, len - got);
    if (n <= 0) break;
    got += (uint64_t)n;
  }
  s->assist_got = got;
  store32(&s->assist_done, job);
}

/* Publishes the slot's event to the Sentry and waits until it hands the slot
 * back. */
INL void handoff(const struct stub_params* p, struct stub_slot* s) {
  uint32_t cpu = cur_cpu();
  s->stub_cpu = cpu;
  store32(&s->state, STUB_SLOT_SENTRY);
  if (load32(&s->sentry_waiting)) futex_wake(&s->state);
  uint32_t spin = s->spin, busy_spin = s->busy_spin;
  if (spin > p->max_spin) spin = p->max_spin;
  if (busy_spin > p->max_spin) busy_spin = p->max_spin;
  /* On the Sentry thread's CPU spinning only delays it: sleep at once. */
  if (cpu == load32(&s->sentry_cpu)) spin = busy_spin = 0;
  /* Past `spin`, go on while the Sentry says it is busy copying (not
   * waiting) for us, up to `busy_spin`. */
  /* Guest-side copies are taken here only: once the stub has announced
   * its sleep (stub_waiting) it takes none until its next trap, which is
   * what lets the Sentry withdraw one the stub did not start. */
  for (uint32_t i = 0;; i++) {
    if (load32(&s->state) == STUB_SLOT_STUB) return;
    if (load32(&s->assist_seq) != load32(&s->assist_done)) assist(p, s);
    if (i >= spin && (i >= busy_spin || !load32(&s->sentry_busy))) break;
    __asm__ volatile("pause");
  }
  for (;;) {
    store32(&s->stub_waiting, 1);
    uint32_t st = load32(&s->state);
    if (st == STUB_SLOT_STUB) break;
    s->stub_sleeps++;
    futex_wait(&s->state, st);
  }
  store32(&s->stub_waiting, 0);
}

/* Installs the fs/gs bases the Sentry handed back (only those that differ
 * from what the thread runs with) and records them in the slot's cache. */
INL void apply_bases(const struct stub_params* p, struct stub_slot* s,
                     uint64_t cur_fs, uint64_t cur_gs) {
  const uint64_t fs = s->regs.fs_base, gs = s->regs.gs_base;
  if (fs != cur_fs) set_fs(p, fs);
  if (gs != cur_gs) set_gs(p, gs);
  s->cur_fs = fs;
  s->cur_gs = gs;
}

/* Loads what the Sentry wrote into the frame that rt_sigreturn restores. */
INL void load_state(const struct stub_params* p, struct stub_slot* s,
                    struct k_ucontext* uc, uint64_t cur_fs, uint64_t cur_gs) {
  struct k_sigcontext* m = &uc->uc_mcontext;
  const struct stub_regs* r = &s->regs;
  m->r8 = r->r8;
  m->r9 = r->r9;
  m->r10 = r->r10;
  m->r11 = r->r11;
  m->r12 = r->r12;
  m->r13 = r->r13;
  m->r14 = r->r14;
  m->r15 = r->r15;
  m->rdi = r->rdi;
  m->rsi = r->rsi;
  m->rbp = r->rbp;
  m->rbx = r->rbx;
  m->rdx = r->rdx;
  m->rax = r->rax;
  m->rcx = r->rcx;
  m->rsp = r->rsp;
  m->rip = r->rip;
  m->eflags = r->eflags;
  /* The guest's signal mask is the Sentry's business; undo whatever a forged
   * rt_sigreturn frame set (it could block the interrupt signal). */
  uc->uc_sigmask = 0;
  apply_bases(p, s, cur_fs, cur_gs);
  s->tsc_resume = rdtsc();
  uint8_t* fp = (uint8_t*)m->fpstate;
  if (s->fp_load == STUB_FP_LOAD && fp != 0) {
    uint64_t n = p->xsave_size;
    uint32_t frame_size =
        *(uint32_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF + 16); /* xstate_size */
    if (*(uint32_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF) !=
        STUB_FP_XSTATE_MAGIC1) {
      frame_size = STUB_XSAVE_HDR_OFF;
    }
    if (frame_size < n) n = frame_size;
    copy(fp, s->xsave, STUB_XSAVE_SW_RESERVED_OFF);
    if (n > STUB_XSAVE_HDR_OFF) {
      copy(fp + STUB_XSAVE_HDR_OFF, s->xsave + STUB_XSAVE_HDR_OFF,
           n - STUB_XSAVE_HDR_OFF);
    }
  }
}

/* Loads a standard-format XSAVE image: the kernel's signal frame or the
 * Sentry's sanitised one in the slot. A corrupt image (a guest thread
 * scribbling on another thread's region) faults here and the stub dies.
 * The requested-feature mask is the platform's user xfeatures, never all
 * ones: on a CPU with AMX, XCR0 also enables the dynamic tile-data feature,
 * whose 8 KiB area lies past the end of the signal frame (the kernel sized
 * the frame without it), and XRSTOR with that bit set touches it: the stub
 * faulted on the page above the altstack on every first trap. */
INL void xrstor(const struct stub_params* p, const uint8_t* img) {
  __asm__ volatile("xrstor64 (%0)" ::"r"(img), "a"((uint32_t)p->xfeatures),
                   "d"((uint32_t)(p->xfeatures >> 32))
                   : "memory");
}

/* Returns to guest code with the slot's registers without rt_sigreturn (one
 * kernel entry less per round trip; the handler runs with SA_NODEFER and an
 * empty mask, so there is no signal mask to restore): pops the GPRs from the
 * slot and iretq's through its rip, cs, eflags, rsp and ss, which are the
 * tail of struct stub_regs in IRET frame order. cs and ss are forced first
 * (the slot is guest-writable; IRET to the same privilege level changes
 * neither IOPL nor IF). Returns to its caller only when an interrupt signal
 * is pending: it is reported before the guest runs.
 *
 * [stub_resume_commit, stub_resume_end) is the commit window: an interrupt
 * signal nested there abandons this frame and is reported at once, from the
 * slot's registers (stub_handler); one nested before the window sets
 * `interrupt_pending`, which the window's first instruction checks. */
__asm__(
    ".pushsection sandbox_stub,\"ax\",@progbits\n"
    ".globl stub_resume_guest\n"
    ".hidden stub_resume_guest\n"
    ".type stub_resume_guest,@function\n"
    "stub_resume_guest:\n" /* rdi = &slot->regs, rsi = &interrupt_pending */
    "  pushfq\n"
    "  andq $~0x4000, (%rsp)\n" /* NT: a 64-bit IRET #GPs with it set */
    "  popfq\n"
    ".globl stub_resume_commit\n"
    ".hidden stub_resume_commit\n"
    "stub_resume_commit:\n"
    "  cmpl $0, (%rsi)\n"
    "  jne 1f\n"
    "  mov %rdi, %rsp\n"
    "  movq $0x33, 136(%rsp)\n" /* regs.cs */
    "  movq $0x2b, 160(%rsp)\n" /* regs.ss */
    "  pop %r15\n"
    "  pop %r14\n"
    "  pop %r13\n"
    "  pop %r12\n"
    "  pop %rbp\n"
    "  pop %rbx\n"
    "  pop %r11\n"
    "  pop %r10\n"
    "  pop %r9\n"
    "  pop %r8\n"
    "  pop %rax\n"
    "  pop %rcx\n"
    "  pop %rdx\n"
    "  pop %rsi\n"
    "  pop %rdi\n"
    "  add $8, %rsp\n" /* orig_rax */
    "  iretq\n"
    ".globl stub_resume_end\n"
    ".hidden stub_resume_end\n"
    "stub_resume_end:\n"
    "1:\n"
    "  ret\n"
    ".size stub_resume_guest, .-stub_resume_guest\n"
    ".popsection\n");

void stub_resume_guest(struct stub_regs* regs, uint32_t* interrupt_pending)
    __attribute__((visibility("hidden")));
extern char stub_resume_commit[] __attribute__((visibility("hidden")));
extern char stub_resume_end[] __attribute__((visibility("hidden")));

_Static_assert(offsetof(struct stub_regs, r15) == 0 &&
                   offsetof(struct stub_regs, rdi) == 112 &&
                   offsetof(struct stub_regs, orig_rax) == 120 &&
                   offsetof(struct stub_regs, rip) == 128 &&
                   offsetof(struct stub_regs, cs) == 136 &&
                   offsetof(struct stub_regs, eflags) == 144 &&
                   offsetof(struct stub_regs, rsp) == 152 &&
                   offsetof(struct stub_regs, ss) == 160,
               "stub_resume_guest pops struct stub_regs in this order");
_Static_assert(offsetof(struct stub_slot, xsave) % 64 == 0,
               "XRSTOR needs a 64-byte aligned image");

/* Copies the FP image the kernel saved in this signal's frame into the slot
 * for the Sentry. */
INL void save_fp(const struct stub_params* p, struct stub_slot* s,
                 const uint8_t* fp) {
  uint32_t len = 0;
  if (fp != 0) {
    len = STUB_XSAVE_HDR_OFF;
    if (*(const uint32_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF) ==
        STUB_FP_XSTATE_MAGIC1) {
      len = *(const uint32_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF + 16);
    }
    if (len > p->xsave_size) len = (uint32_t)p->xsave_size;
    copy(s->xsave, fp, len);
  }
  s->xsave_len = len;
}

/* Hands the slot's event to the Sentry and runs the guest with what comes
 * back, reporting interrupts that arrive meanwhile. `fp` is the guest's
 * current FP image: the one the kernel saved in this signal's frame (what
 * STUB_FP_KEEP keeps), or the slot's once the Sentry loaded one. */
INL __attribute__((noreturn)) void serve(const struct stub_params* p,
                                         struct stub_slot* s,
                                         const uint8_t* fp, uint64_t cur_fs,
                                         uint64_t cur_gs) {
  for (;;) {
    handoff(p, s);
    apply_bases(p, s, cur_fs, cur_gs);
    cur_fs = s->cur_fs;
    cur_gs = s->cur_gs;
    if (s->fp_load == STUB_FP_LOAD) {
      fp = s->xsave;
      s->xsave_len = (uint32_t)p->xsave_size;
    }
    /* From here on the live FP state is the guest's: this code uses general
     * registers only (-mgeneral-regs-only). */
    if (fp != 0) xrstor(p, fp);
    s->tsc_resume = rdtsc();
    stub_resume_guest(&s->regs, &s->interrupt_pending);
    /* The interrupt signal came while this handler ran: report it with the
     * state the guest was about to resume with (the slot's registers; the
     * slot's FP image is current: the copy made at the trap or the one the
     * Sentry loaded). */
    s->interrupt_pending = 0;
    s->regs.orig_rax = (uint64_t)-1;
    s->signo = SIGCHLD;
    s->event = STUB_EV_INTERRUPT;
  }
}

/* The handler of every trapping signal; runs on the thread's altstack with
 * SA_NODEFER and no signal blocked (so that it can return to the guest
 * without rt_sigreturn), so it may nest: a signal that interrupted the blob
 * itself is the interrupt signal arriving while the handler runs, or a
 * fault in it (the stub dies). */
STUB_FN void stub_handler(int sig, struct k_siginfo* info,
                          struct k_ucontext* uc) {
  uint64_t tsc = rdtsc();
  /* The interrupt signal comes from the Sentry (tgkill): its si_pid and
   * si_uid name the Sentry's host process, and both this frame and the slot
   * are guest-readable. Nothing reads them: clear them first. */
  if (sig == SIGCHLD) info->addr = 0;
  const struct stub_params* p = P();
  struct stub_slot* s = slot_from_sp(p);
  struct k_sigcontext* m = &uc->uc_mcontext;
  struct stub_regs* r = &s->regs;
  uint64_t tmp;

  if (m->rip - p->code_start < p->code_len) {
    if (sig != SIGCHLD) die();
    if (m->rip - (uint64_t)stub_resume_commit <
        (uint64_t)(stub_resume_end - stub_resume_commit)) {
      /* In the commit window: the guest's registers are all in the slot
       * and its FP state is live (saved in this frame). Report the
       * interrupt from there; the outer frame is abandoned. */
      s->tsc_trap = tsc;
      s->interrupt_pending = 0;
      r->orig_rax = (uint64_t)-1;
      s->signo = (uint32_t)sig;
      s->fault_code = info->si_code;
      copy(s->siginfo, info, sizeof(s->siginfo));
      save_fp(p, s, (const uint8_t*)m->fpstate);
      s->event = STUB_EV_INTERRUPT;
      serve(p, s, (const uint8_t*)m->fpstate, s->cur_fs, s->cur_gs);
    }
    /* Before the window: the outer handler reports it (rt_sigreturn back
     * into it through the restorer). */
    store32(&s->interrupt_pending, 1);
    return;
  }
  s->tsc_trap = tsc;

  r->r8 = m->r8;
  r->r9 = m->r9;
  r->r10 = m->r10;
  r->r11 = m->r11;
  r->r12 = m->r12;
  r->r13 = m->r13;
  r->r14 = m->r14;
  r->r15 = m->r15;
  r->rdi = m->rdi;
  r->rsi = m->rsi;
  r->rbp = m->rbp;
  r->rbx = m->rbx;
  r->rdx = m->rdx;
  r->rax = m->rax;
  r->rcx = m->rcx;
  r->rsp = m->rsp;
  r->rip = m->rip;
  r->eflags = m->eflags;
  r->cs = m->cs;
  r->ss = m->ss;
  r->orig_rax = (uint64_t)-1;
  /* Without FSGSBASE a guest changes its bases only through arch_prctl,
   * which traps to the Sentry, or by loading a segment selector into
   * %fs/%gs (which the frame does not show; not supported: the base the
   * Sentry last set is reported). The cache saves two syscalls per trap. */
  uint64_t cur_fs, cur_gs;
  if (p->use_fsgsbase) {
    cur_fs = get_fs(p, &tmp);
    cur_gs = get_gs(p, &tmp);
  } else {
    cur_fs = s->cur_fs;
    cur_gs = s->cur_gs;
  }
  r->fs_base = cur_fs;
  r->gs_base = cur_gs;

  s->signo = (uint32_t)sig;
  s->fault_code = info->si_code;
  s->fault_addr = info->addr;
  s->fault_err = m->err;
  s->trapno = m->trapno;
  copy(s->siginfo, info, sizeof(s->siginfo));
  save_fp(p, s, (const uint8_t*)m->fpstate);

  uint32_t ev = STUB_EV_FAULT;
  if (sig == SIGSYS) {
    ev = STUB_EV_SYSCALL;
    /* The kernel rolled rax back to the full syscall number. */
    uint64_t nr = m->rax;
    if (info->arch != AUDIT_ARCH_X86_64) {
      nr = (uint64_t)(uint32_t)info->syscall | 0x86000000ull;
    }
    r->orig_rax = nr;
    r->rax = (uint64_t)-38; /* -ENOSYS, as at syscall entry */
  } else if (sig == SIGCHLD) {
    ev = STUB_EV_INTERRUPT;
  } else if (sig == SIGSEGV && info->si_code == SI_KERNEL && m->trapno == 13) {
    /* A #GP: CPUID with faulting on? A fault here (the guest unmapped its
     * own code meanwhile) kills the stub, never the Sentry. */
    const uint8_t* ip = (const uint8_t*)m->rip;
    if (ip[0] == 0x0f && ip[1] == 0xa2) ev = STUB_EV_CPUID;
  }
  s->event = ev;
  if (uc->uc_sigmask != 0) {
    /* Signals were blocked at the trap: the guest ran a forged rt_sigreturn
     * frame through the blob's restorer (the handler itself blocks
     * nothing). Return through rt_sigreturn this once, which restores an
     * empty mask (load_state), so the interrupt signal lands again. */
    handoff(p, s);
    load_state(p, s, uc, cur_fs, cur_gs);
    return;
  }
  serve(p, s, (const uint8_t*)m->fpstate, cur_fs, cur_gs);
}

/* First entry of a new guest thread (called from the syscall loop once the
 * thread's filter is installed). Builds a signal frame by hand and returns
 * into guest code through rt_sigreturn, like the handler does. */
STUB_FN __attribute__((noreturn)) void stub_guest_thread_main(void) {
  const struct stub_params* p = P();
  struct stub_slot* s = slot_from_sp(p);
  uintptr_t region = get_sp() & ~(uintptr_t)(p->region_size - 1);
  uintptr_t alt = region + p->altstack_off;
  struct k_ucontext* uc = (struct k_ucontext*)(alt + 256);
  uint8_t* fp = (uint8_t*)(alt + 1024);
  uint64_t tmp;

  zero(uc, sizeof(*uc));
  zero(fp, p->xsave_size + 4);
  *(uint16_t*)(fp + 0) = 0x37f;   /* fcw */
  *(uint32_t*)(fp + 24) = 0x1f80; /* mxcsr */
  *(uint32_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF) = STUB_FP_XSTATE_MAGIC1;
  *(uint32_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF + 4) =
      (uint32_t)p->xsave_size + 4;
  *(uint64_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF + 8) = p->xfeatures;
  *(uint32_t*)(fp + STUB_XSAVE_SW_RESERVED_OFF + 16) = (uint32_t)p->xsave_size;
  *(uint32_t*)(fp + p->xsave_size) = STUB_FP_XSTATE_MAGIC2;
  *(uint64_t*)(fp + STUB_XSAVE_HDR_OFF) = 3; /* x87 | SSE */

  uc->uc_flags = 1 | 2 | 4; /* FP_XSTATE | SIGCONTEXT_SS | STRICT_RESTORE_SS */
  uc->uc_stack.ss_sp = alt;
  uc->uc_stack.ss_size = p->altstack_size;
  uc->uc_mcontext.cs = 0x33;
  uc->uc_mcontext.ss = 0x2b;
  uc->uc_mcontext.eflags = 0x202;
  uc->uc_mcontext.fpstate = (uint64_t)fp;
  uc->uc_sigmask = 0;

  uint64_t cur_fs = get_fs(p, &tmp);
  uint64_t cur_gs = get_gs(p, &tmp);
  s->event = STUB_EV_READY;
  handoff(p, s);
  load_state(p, s, uc, cur_fs, cur_gs);
  __asm__ volatile(
      "mov %0, %%rsp\n"
      "mov $15, %%eax\n"
      "syscall\n"
      "ud2\n" ::"r"(uc)
      : "memory");
  __builtin_unreachable();
}

/* The syscall thread's loop and a new guest thread's set-up. Uses no stack:
 * guest threads can write to any writable page of the stub. Registers:
 * r12 = request page (read-only), r13 = result page (hints only), r14d = last
 * sequence, r15 = params, rbx = value being replied, ebp = packets left. A
 * clone request returns to the new thread on its own stack, which is how the
 * two paths are told apart (the loop runs with rsp = 0).
 *
 * Replies are packets on the reply pipe whose lengths encode the result (see
 * stub_abi.h); their bytes come from the read-only request page, so nothing a
 * guest thread writes can change what the Sentry reads. A short or failed
 * write kills the stub. */
__asm__(
    ".pushsection sandbox_stub,\"ax\",@progbits\n"
    ".globl stub_syscall_loop\n"
    ".hidden stub_syscall_loop\n"
    ".type stub_syscall_loop,@function\n"
    "stub_syscall_loop:\n"
    "  mov %rdi, %r12\n"
    "  mov %rsi, %r13\n"
    "  mov %rdx, %r15\n"
    "  mov %rcx, %rbx\n" /* thread 0's stack, or 0 */
    "  xor %r14d, %r14d\n"
    "  xor %esp, %esp\n"
    "  mov $11, %eax\n" /* munmap(the source stack we came on) */
    "  mov 8(%r15), %rdi\n"
    "  add $0x11000, %rdi\n" /* STUB_SOURCE_STACK_OFF */
    "  mov $0x8000, %esi\n"  /* STUB_SOURCE_STACK_SIZE */
    "  syscall\n"
    "  test %rbx, %rbx\n"
    "  jz 1f\n"
    "  mov $56, %eax\n" /* clone(thread flags, thread 0's stack) */
    "  mov $0x50f00, %edi\n"
    "  mov %rbx, %rsi\n"
    "  xor %edx, %edx\n"
    "  xor %r10d, %r10d\n"
    "  xor %r8d, %r8d\n"
    "  syscall\n"
    "  test %rsp, %rsp\n"
    "  jnz 3f\n"
    "  mov %rax, %rbx\n" /* reply thread 0's tid: two packets */
    "  mov $2, %ebp\n"
    "  jmp 10f\n"
    "1:\n"
    "  mov (%r12), %eax\n"
    "  cmp %eax, %r14d\n"
    "  jne 2f\n"
    "  mov $0x7b, %ecx\n" /* on the Sentry thread's CPU: do not spin */
    "  lsl %ecx, %ecx\n"  /* (cur_cpu() below) */
    "  jnz 11f\n"
    "  and $0xfff, %ecx\n"
    "  cmp 4(%r12), %ecx\n" /* req->sentry_cpu */
    "  je 12f\n"
    "11:\n"
    "  mov $200, %ecx\n" /* spin a little: requests come in bursts */
    "6:\n"
    "  pause\n"
    "  mov (%r12), %eax\n"
    "  cmp %eax, %r14d\n"
    "  jne 2f\n"
    "  dec %ecx\n"
    "  jnz 6b\n"
    "12:\n"
    "  mov $1, %eax\n" /* res->waiting = 1, a full barrier */
    "  xchg %eax, 4(%r13)\n"
    "  mov (%r12), %eax\n"
    "  cmp %eax, %r14d\n"
    "  jne 7f\n"
    "  mov $202, %eax\n" /* futex(&req->seq, FUTEX_WAIT, last, NULL) */
    "  mov %r12, %rdi\n"
    "  xor %esi, %esi\n"
    "  mov %r14d, %edx\n"
    "  xor %r10d, %r10d\n"
    "  syscall\n"
    "7:\n"
    "  movl $0, 4(%r13)\n"
    "  jmp 1b\n"
    "2:\n"
    "  mov %eax, %r14d\n"
    "  mov 8(%r12), %rax\n"
    "  mov 16(%r12), %rdi\n"
    "  mov 24(%r12), %rsi\n"
    "  mov 32(%r12), %rdx\n"
    "  mov 40(%r12), %r10\n"
    "  mov 48(%r12), %r8\n"
    "  mov 56(%r12), %r9\n"
    "  syscall\n"
    "  test %rsp, %rsp\n"
    "  jnz 3f\n"
    "  mov %rax, %rbx\n"
    "  mov $1, %ebp\n"
    "  cmpq $56, 8(%r12)\n" /* a clone replies a tid: two packets */
    "  jne 10f\n"
    "  mov $2, %ebp\n"
    "10:\n" /* write(reply_fd, req, 1 + (rbx & 0xfff)) */
    "  mov %ebx, %edx\n"
    "  and $0xfff, %edx\n"
    "  inc %edx\n"
    "  mov $1, %eax\n"
    "  movslq 108(%r15), %rdi\n" /* reply_fd */
    "  mov %r12, %rsi\n"
    "  syscall\n"
    "  cmp %rax, %rdx\n"
    "  jne 9f\n"
    "  shr $12, %rbx\n"
    "  dec %ebp\n"
    "  jnz 10b\n"
    "  mov %r14d, (%r13)\n" /* hint: res->seq = seq, after the packets */
    "  jmp 1b\n"
    "3:\n" /* a new guest thread: confine it before it touches memory */
    "  mov $131, %eax\n" /* sigaltstack(&req->ss, NULL) */
    "  lea 64(%r12), %rdi\n"
    "  xor %esi, %esi\n"
    "  syscall\n"
    "  test %rax, %rax\n"
    "  jnz 9f\n"
    "  cmpl $0, 100(%r15)\n" /* use_sud */
    "  je 4f\n"
    "  mov $157, %eax\n" /* prctl(PR_SET_SYSCALL_USER_DISPATCH, ON, ...) */
    "  mov $59, %edi\n"
    "  mov $1, %esi\n"
    "  mov 16(%r15), %rdx\n"
    "  mov 24(%r15), %r10\n"
    "  xor %r8d, %r8d\n"
    "  syscall\n"
    "  test %rax, %rax\n"
    "  jnz 9f\n"
    "4:\n"
    "  cmpl $0, 96(%r15)\n" /* cpuid_faulting */
    "  je 5f\n"
    "  mov $158, %eax\n" /* arch_prctl(ARCH_SET_CPUID, 0) */
    "  mov $0x1012, %edi\n"
    "  xor %esi, %esi\n"
    "  syscall\n"
    "  test %rax, %rax\n"
    "  jnz 9f\n"
    "5:\n"
    "  mov $317, %eax\n" /* seccomp(SET_MODE_FILTER, 0, &req->guest_filter) */
    "  mov $1, %edi\n"
    "  xor %esi, %esi\n"
    "  lea 88(%r12), %rdx\n" /* STUB_REQ_FILTER_OFF */
    "  syscall\n"
    "  test %rax, %rax\n"
    "  jnz 9f\n"
    "  and $-16, %rsp\n"
    "  call stub_guest_thread_main\n"
    "9:\n"
    "  ud2\n" /* signals are blocked: the kernel kills the stub */
    ".size stub_syscall_loop, .-stub_syscall_loop\n"
    "\n"
    ".globl stub_restorer\n"
    ".hidden stub_restorer\n"
    "stub_restorer:\n"
    "  mov $15, %eax\n"
    "  syscall\n"
    "  ud2\n"
    ".popsection\n");

void stub_syscall_loop(void* req, void* res, const void* params,
                       uint64_t thread0_stack)
    __attribute__((noreturn, visibility("hidden")));
void stub_restorer(void) __attribute__((visibility("hidden")));

/* Moves `fd` to the fixed number `to` (neither the memory file's nor
 * anything still needed: the caller moved everything to numbers >= 3 first,
 * and the fixed numbers are below 3). */
INL void move_fd(int fd, int to) {
  if (fd != to && sys3(NR_dup3, fd, to, 0) != to) sys1(NR_exit_group, 8);
}

/* A new stub process (forked from the source). Becomes its syscall thread.
 * `reply_wfd` is the write end of its reply pipe, `data_rfd` the read end of
 * its data pipe or -1. */
STUB_FN __attribute__((noreturn)) void stub_new_main(
    const struct stub_params* p, uint64_t shared_off, uint64_t thread0_off,
    int reply_wfd, int data_rfd) {
  uint64_t base = p->stub_base;
  const struct stub_source_ctl* ctl =
      (const struct stub_source_ctl*)(base + STUB_SOURCE_CTL_OFF);
  sys2(NR_prctl, 1 /*PR_SET_PDEATHSIG*/, SIGKILL);
  if ((uint64_t)sys0(NR_getppid) != load64(&ctl->sentry_pid)) {
    sys1(NR_exit_group, 1);
  }
  /* The process filter, off the control page (unmapped below) onto this
   * stack, which the syscall loop unmaps on entry: no copy stays. */
  struct stub_sock_filter insns[STUB_FILTER_MAX_INSNS];
  uint32_t n = ctl->process_filter_len;
  if (n == 0 || n > STUB_FILTER_MAX_INSNS) sys1(NR_exit_group, 6);
  copy(insns, ctl->process_insns, (uint64_t)n * sizeof(insns[0]));
  struct stub_sock_fprog prog;
  zero(&prog, sizeof(prog));
  prog.len = (uint16_t)n;
  prog.filter = (uint64_t)insns;
  /* Exactly three files: the memory file, the reply pipe at reply_fd (the
   * number the process filter allows writes to) and the data pipe at
   * data_fd (reads allowed). Both go through a fresh number >= 3 first
   * (F_DUPFD), so that neither move overwrites the other's source. */
  long rt = sys3(NR_fcntl, reply_wfd, 0 /*F_DUPFD*/, 3);
  if (rt < 0) sys1(NR_exit_group, 8);
  long dt = -1;
  if (data_rfd >= 0 && p->data_fd >= 0) {
    dt = sys3(NR_fcntl, data_rfd, 0 /*F_DUPFD*/, 3);
    if (dt < 0) sys1(NR_exit_group, 8);
  }
  move_fd((int)rt, p->reply_fd);
  if (dt >= 0) move_fd((int)dt, p->data_fd);
  close_all_but(p->memfd, p->reply_fd, dt >= 0 ? p->data_fd : -1);
  sys2(NR_munmap, base + STUB_SOURCE_CTL_OFF, 4096);
  long r = sys6(NR_mmap, base + STUB_REQUEST_OFF, 4096, 1 /*PROT_READ*/,
                0x11 /*MAP_SHARED|MAP_FIXED*/, p->memfd, shared_off);
  if (r != (long)(base + STUB_REQUEST_OFF)) sys1(NR_exit_group, 2);
  r = sys6(NR_mmap, base + STUB_RESULT_OFF, 4096, 3 /*PROT_READ|WRITE*/, 0x11,
           p->memfd, shared_off + 4096);
  if (r != (long)(base + STUB_RESULT_OFF)) sys1(NR_exit_group, 3);
  /* Thread 0's region; the loop clones the thread on entry. */
  uint64_t thread0_stack = 0;
  if (thread0_off != 0) {
    uint64_t region = base + STUB_THREADS_OFF;
    r = sys6(NR_mmap, region + 4096, p->region_size - 4096, 3, 0x11, p->memfd,
             thread0_off);
    if (r != (long)(region + 4096)) sys1(NR_exit_group, 7);
    thread0_stack = region + p->region_size - 64;
  }

  /* SIGSYS, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGCHLD. */
  const uint64_t kMask = (1ull << 30) | (1ull << 10) | (1ull << 6) |
                         (1ull << 7) | (1ull << 3) | (1ull << 4) | (1ull << 16);
  struct k_sigaction sa;
  sa.handler = (void*)stub_handler;
  /* SA_NODEFER and an empty mask: the handler returns to the guest without
   * rt_sigreturn, so nothing may be blocked on entry (see stub_handler). */
  sa.flags = 4 /*SA_SIGINFO*/ | 0x08000000 /*SA_ONSTACK*/ |
             0x04000000 /*SA_RESTORER*/ | 0x40000000 /*SA_NODEFER*/;
  sa.restorer = (void*)stub_restorer;
  sa.mask = 0;
  for (int sig = 1; sig <= 64; sig++) {
    if (!(kMask & (1ull << (sig - 1)))) continue;
    if (sys4(NR_rt_sigaction, sig, &sa, 0, 8) != 0) sys1(NR_exit_group, 4);
  }
  if (sys6(NR_prctl, 38 /*PR_SET_NO_NEW_PRIVS*/, 1, 0, 0, 0, 0) != 0) {
    sys1(NR_exit_group, 5);
  }
  if (sys3(NR_seccomp, 1 /*SET_MODE_FILTER*/, 0, &prog) != 0) {
    sys1(NR_exit_group, 6);
  }
  stub_syscall_loop((void*)(base + STUB_REQUEST_OFF),
                    (void*)(base + STUB_RESULT_OFF), p, thread0_stack);
}

/* The source stub: entered right after the Sentry's fork, on its own stack.
 * Drops everything inherited from the Sentry but the memory file and the stub
 * region, then clones new stubs on request. */
STUB_FN __attribute__((noreturn)) void stub_source_main(void) {
  const struct stub_params* p = P();
  uint64_t base = p->stub_base;
  struct stub_source_ctl* ctl =
      (struct stub_source_ctl*)(base + STUB_SOURCE_CTL_OFF);
  sys2(NR_prctl, 1 /*PR_SET_PDEATHSIG*/, SIGKILL);
  if ((uint64_t)sys0(NR_getppid) != load64(&ctl->sentry_pid)) {
    sys1(NR_exit_group, 1);
  }
  sys0(NR_setsid);
  uint64_t all = ~0ull;
  sys4(NR_rt_sigprocmask, 2 /*SIG_SETMASK*/, &all, 0, 8);
  struct k_sigaction dfl;
  zero(&dfl, sizeof(dfl));
  for (int sig = 1; sig <= 64; sig++) {
    if (sig != 9 && sig != 19) sys4(NR_rt_sigaction, sig, &dfl, 0, 8);
  }
  close_all_but(p->memfd, p->source_sock, -1);
  sys2(NR_munmap, 0, base);
  uint64_t top = 0x7ffffffff000ull;
  uint64_t end = base + STUB_SOURCE_END;
  if (end < top) sys2(NR_munmap, end, top - end);

  store32(&ctl->ready, 1);
  sys3(NR_futex, &ctl->ready, 1, 0x7fffffff);
  uint32_t last = 0;
  for (;;) {
    uint32_t seq = load32(&ctl->req_seq);
    if (seq == last) {
      futex_wait(&ctl->req_seq, last);
      continue;
    }
    last = seq;
    uint64_t off = ctl->shared_off;
    uint64_t thread0_off = ctl->thread0_off;
    /* The new stub's reply pipe: the read end goes to the Sentry (and is
     * closed here before the clone), the write end to the stub only. Its
     * data pipe (non-blocking): both ends go to the Sentry, the read end
     * also to the stub. Without a data pipe the stub works, without
     * guest-side copies. */
    int32_t fds[2], data[2];
    int32_t sent = 0;
    long pid = sys2(NR_pipe2, fds, 0x4000 /*O_DIRECT: packets*/);
    if (pid == 0) {
      pid = send_fd(p->source_sock, fds[0]);
      sys1(NR_close, fds[0]);
      if (pid >= 0) {
        sent = 1;
        data[0] = -1;
        if (sys2(NR_pipe2, data, 0x800 /*O_NONBLOCK*/) == 0) {
          /* fd_sent counts the messages queued; the Sentry takes them all
           * and uses the data pipe only if all three came. */
          if (send_fd(p->source_sock, data[0]) >= 0) {
            sent = 2;
            if (send_fd(p->source_sock, data[1]) >= 0) sent = 3;
          }
          if (sent != 3) {
            sys1(NR_close, data[0]);
            data[0] = -1;
          }
          sys1(NR_close, data[1]);
        }
        pid = sys6(NR_clone, 0x8000 /*CLONE_PARENT*/ | SIGCHLD, 0, 0, 0, 0, 0);
        if (pid == 0) stub_new_main(p, off, thread0_off, fds[1], data[0]);
        if (data[0] >= 0) sys1(NR_close, data[0]);
      }
      sys1(NR_close, fds[1]);
    }
    ctl->fd_sent = sent;
    ctl->result = pid;
    store32(&ctl->done_seq, seq);
    futex_wake(&ctl->done_seq);
  }
}

/* Where the blob is in the Sentry's binary (ordinary code, not copied). */
extern char __stop_sandbox_stub[] __attribute__((visibility("hidden")));
const void* sandbox_stub_blob(uint64_t* len, uint64_t* source_main_off) {
  *len = (uint64_t)(__stop_sandbox_stub - __start_sandbox_stub);
  *source_main_off =
      (uint64_t)((const char*)stub_source_main - __start_sandbox_stub);
  return __start_sandbox_stub;
}
