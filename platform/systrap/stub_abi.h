/* The contract between the Sentry and the stub blob (stub.c).
 *
 * Plain C so that the freestanding blob and the C++ Sentry share one layout.
 * Everything in a struct that lives in memory a guest can write (slots,
 * result pages) is attacker-controlled from the Sentry's point of view and is
 * validated on every read. The params block and the request page are mapped
 * read-only in stubs.
 *
 * Replies of the syscall thread do not travel through memory: each stub holds
 * the write end of its own pipe (packet mode, O_DIRECT) at fd `reply_fd`, and
 * only the syscall thread may write to it (process filter: write on reply_fd
 * from the blob; guest filter: no write at all). A reply is one packet per
 * 12 bits of the result, each copied from the read-only request page (its
 * first byte is the low byte of the request's seq) and
 * STUB_REPLY_LEN(bits) bytes long, so the length carries the value and
 * nothing in it is guest-writable:
 *   mmap, munmap, mprotect: one packet with ret & 0xfff (0 = success: ret is
 *     the requested address for a MAP_FIXED mmap or 0; else 4096 - errno);
 *   clone, and thread 0's tid at start: two packets, ret & 0xfff then
 *     (ret >> 12) & 0xfff (a 24-bit two's complement value: tids are below
 *     2^22, errors are -1..-4095).
 * The result page only carries hints (seq of the last reply, "asleep").
 *
 * Stub address-space layout, relative to the stub base S (STUB_*_OFF):
 *   S + 0x0000   params block (read-only)
 *   S + 0x2000   blob code (read+exec), at most STUB_CODE_MAX bytes
 *   S + 0x10000  source control page (shared anonymous; source stub only)
 *   S + 0x11000  source stack (private; the Sentry unmaps it in new stubs)
 *   S + 0x100000 request page (memfd, read-only), result page (memfd, rw)
 *   S + 0x200000 thread regions: thread i at S + 0x200000 + i * region_size;
 *                [guard page][slot][alternate signal stack]
 * The guest's addresses lie below S.
 */
#ifndef PLATFORM_SYSTRAP_STUB_ABI_H_
#define PLATFORM_SYSTRAP_STUB_ABI_H_

#include <stdint.h>

#define STUB_PARAMS_OFF 0x0ul
#define STUB_PARAMS_SIZE 0x2000ul
#define STUB_CODE_OFF 0x2000ul
#define STUB_CODE_MAX (0x10000ul - 0x2000ul)
#define STUB_SOURCE_CTL_OFF 0x10000ul
#define STUB_SOURCE_STACK_OFF 0x11000ul
#define STUB_SOURCE_STACK_SIZE 0x8000ul
#define STUB_SOURCE_END 0x19000ul
#define STUB_REQUEST_OFF 0x100000ul
#define STUB_RESULT_OFF 0x101000ul
#define STUB_THREADS_OFF 0x200000ul
#define STUB_MAX_THREADS 1024ul
/* Size of the whole stub region reserved above the guest's addresses. */
#define STUB_REGION_SIZE 0x20000000ul

#define STUB_PARAMS_MAGIC 0x53595354524150ull /* "SYSTRAP" */

/* The BPF programs live in the params block. */
#define STUB_FILTER_MAX_INSNS 200

struct stub_sock_filter {
  uint16_t code;
  uint8_t jt;
  uint8_t jf;
  uint32_t k;
};

struct stub_sock_fprog {
  uint16_t len;
  uint16_t pad[3];
  uint64_t filter; /* address of stub_sock_filter[len] in the stub */
};

/* The params block is readable by guest code (it lies in the stub's address
 * space): it holds only what the blob needs to run, and nothing that names
 * the host (no PID; the BPF programs are elsewhere: the process filter in
 * the source control page, which a new stub unmaps before any guest code
 * runs, the guest filter in the request page only while a guest thread is
 * being started). Descriptor numbers the blob uses stay. */
struct stub_params {
  uint64_t magic;
  uint64_t stub_base;
  uint64_t code_start;
  uint64_t code_len;
  uint64_t region_size;  /* per-thread region, a power of two */
  uint64_t slot_off;     /* slot within the region */
  uint64_t altstack_off; /* alternate signal stack within the region */
  uint64_t altstack_size;
  uint64_t xsave_size; /* user XSAVE image size (CPUID 0xD, no AMX data) */
  uint64_t xfeatures;  /* user xfeatures (XCR0 without dynamic ones) */
  uint64_t reserved0;  /* zero (was the Sentry's PID) */
  int32_t memfd;
  int32_t use_fsgsbase;   /* rdfsbase/wrfsbase usable, else arch_prctl */
  int32_t cpuid_faulting; /* enable CPUID faulting in guest threads */
  int32_t use_sud;        /* syscall user dispatch in guest threads */
  uint32_t max_spin;      /* bound on the stub's spin iterations */
  int32_t reply_fd;       /* write end of the reply pipe in every stub */
  /* The source's end of its socket to the Sentry (reply pipe read ends go
   * through it, SCM_RIGHTS). Not open in stubs. */
  int32_t source_sock;
  /* Read end of the stub's data pipe in every stub (guest-side copies, see
   * `assist_*` in struct stub_slot), or -1 if the stub has none. */
  int32_t data_fd;
};

/* Offsets used by the blob's assembly (checked with static asserts). */
#define STUB_P_CODE_START 16
#define STUB_P_CODE_LEN 24
#define STUB_P_CPUID_FAULTING 96
#define STUB_P_USE_SUD 100
#define STUB_P_REPLY_FD 108

/* Source control page: Sentry <-> source stub (trusted on both sides). */
struct stub_source_ctl {
  uint32_t ready;       /* futex: source sets 1 once it waits for requests */
  uint32_t req_seq;     /* futex: Sentry increments to request a stub */
  uint32_t done_seq;    /* futex: source sets to req_seq when answered */
  int32_t fd_sent;      /* messages (one fd each) the source queued: the
                           reply pipe's read end, then the data pipe's read
                           and write ends; the data pipe is used only if
                           all three came */
  uint64_t shared_off;  /* memfd offset of the new stub's request page */
  int64_t result;       /* new stub pid or -errno */
  uint64_t thread0_off; /* memfd offset of thread 0's region (after guard) */
  /* The Sentry's PID: the source and each new stub check that it is their
   * parent (the PDEATHSIG race) before the new stub unmaps this page. */
  uint64_t sentry_pid;
  /* The process filter, which each new stub copies to its stack and
   * installs before it unmaps this page. */
  uint32_t process_filter_len;
  uint32_t pad;
  struct stub_sock_filter process_insns[STUB_FILTER_MAX_INSNS];
};

/* Request page (read-only in the stub): Sentry -> syscall thread. */
struct stub_request {
  uint32_t seq;        /* futex: Sentry increments per request */
  uint32_t sentry_cpu; /* CPU of the requesting Sentry thread, ~0 unknown:
                          the syscall thread does not spin there */
  uint64_t sysno;
  uint64_t args[6];
  /* For a thread clone: the new thread's sigaltstack (stack_t layout). */
  uint64_t ss_sp;
  int32_t ss_flags;
  int32_t pad1;
  uint64_t ss_size;
  /* The guest filter a new guest thread stacks (its `filter` points at
   * guest_insns below): written by the Sentry while a guest thread is being
   * started (thread 0 from the stub's creation), zeroed once every such
   * thread has installed it, so that guest code cannot read it later. */
  struct stub_sock_fprog guest_filter;
  struct stub_sock_filter guest_insns[STUB_FILTER_MAX_INSNS];
};
#define STUB_REQ_SEQ_OFF 0
#define STUB_REQ_CPU_OFF 4
#define STUB_REQ_SYSNO_OFF 8
#define STUB_REQ_ARGS_OFF 16
#define STUB_REQ_SS_OFF 64
#define STUB_REQ_FILTER_OFF 88

/* Result page (writable by the stub, hence by the guest): hints only, the
 * reply itself comes through the reply pipe. */
struct stub_result {
  uint32_t seq;     /* syscall thread sets to the request's seq after its
                       reply packets are written (the Sentry's spin hint) */
  uint32_t waiting; /* the syscall thread is (about to be) in FUTEX_WAIT */
};
#define STUB_RES_SEQ_OFF 0
#define STUB_RES_WAITING_OFF 4

/* Reply packets (see the top of this file). A packet is at most PIPE_BUF
 * bytes, so pipe writes are atomic and never split. */
#define STUB_REPLY_BITS 12
#define STUB_REPLY_MASK 0xfffu
#define STUB_REPLY_LEN(bits) ((bits) + 1u)
#define STUB_REPLY_MAX_LEN 4096u

/* Slot states (futex word). */
#define STUB_SLOT_SENTRY 1u /* the Sentry owns the slot: an event is ready */
#define STUB_SLOT_STUB 2u   /* the stub owns the slot: run the guest */
#define STUB_SLOT_DEAD 3u   /* written by the Sentry when the stub died */

/* Events (stub -> Sentry). */
#define STUB_EV_READY 1u /* a new thread is ready for its first context */
#define STUB_EV_SYSCALL 2u
#define STUB_EV_FAULT 3u
#define STUB_EV_CPUID 4u     /* #GP on a CPUID instruction (faulting on) */
#define STUB_EV_INTERRUPT 5u /* the interrupt signal arrived */

/* fp_load values (Sentry -> stub). */
#define STUB_FP_KEEP 0u /* keep the state the kernel saved at the trap */
#define STUB_FP_LOAD 1u /* load the slot's XSAVE image */

/* Layout of user_regs_struct (sys/user.h). */
struct stub_regs {
  uint64_t r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
  uint64_t rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp, ss;
  uint64_t fs_base, gs_base, ds, es, fs, gs;
};

/* Per guest thread, at region + slot_off. Shared with the Sentry. */
struct stub_slot {
  uint32_t state;          /* futex word, STUB_SLOT_* */
  uint32_t event;          /* STUB_EV_* */
  uint32_t stub_waiting;   /* stub is (about to be) in FUTEX_WAIT */
  uint32_t sentry_waiting; /* Sentry is (about to be) in FUTEX_WAIT */
  uint32_t fp_load;        /* STUB_FP_* */
  uint32_t spin;           /* stub spin iterations requested by the Sentry */
  uint32_t xsave_len;      /* bytes of xsave[] the stub filled */
  uint32_t signo;
  int32_t fault_code;
  /* CPU the Sentry thread handed off from (sched_getcpu): the stub does
   * not spin when it runs there itself (the Sentry cannot run meanwhile). */
  uint32_t sentry_cpu;
  uint64_t fault_addr;
  uint64_t fault_err; /* page-fault error code (REG_ERR) */
  uint64_t trapno;
  uint64_t tid; /* set by the thread at start */
  /* The fs/gs bases the thread runs with, as last read or set by the stub
   * (stub-private cache; without FSGSBASE the guest cannot change them
   * except through trapped syscalls or selector loads, see stub.c). */
  uint64_t cur_fs, cur_gs;
  /* TSC at the handler's entry and just before returning to the guest
   * (statistics only). */
  uint64_t tsc_trap, tsc_resume;
  /* CPU the stub thread trapped on (the same reasoning, Sentry side), or
   * ~0 if unknown. Hints only. */
  uint32_t stub_cpu;
  /* Set by the Sentry while it serves a long CPU-bound request
   * (platform/long_work.h), cleared before each hand-off: the stub keeps
   * spinning up to `busy_spin` iterations instead of `spin`. */
  uint32_t sentry_busy;
  uint32_t busy_spin;   /* stub spin bound while sentry_busy is set */
  uint32_t stub_sleeps; /* futex waits of the stub (statistics only) */
  /* Stub-private: the interrupt signal arrived while the handler ran (it
   * does not block signals, see stub.c); reported before the guest runs. */
  uint32_t interrupt_pending;
  uint32_t pad3;
  struct stub_regs regs;
  uint8_t siginfo[128];
  /* Guest-side copy (platform/guest_copy.h). While the Sentry serves this
   * thread's request it may queue bytes in the stub's data pipe and set
   * addr, len, then seq; the stub, spinning in handoff(), reads up to `len`
   * bytes from the pipe to `addr` (through its own mapping of the guest's
   * pages), sets `got`, then `done = seq`. The Sentry trusts none of it: a
   * short or forged `got` only makes it copy the rest itself. */
  uint32_t assist_seq;
  uint32_t assist_done;
  uint64_t assist_addr;
  uint64_t assist_len;
  uint64_t assist_got;
  uint8_t pad2[1024 - 128 - 27 * 8 - 128 - 32];
  uint8_t xsave[]; /* 64-byte aligned XSAVE image */
};

#define STUB_SLOT_HEADER 1024u

/* Offsets into the XSAVE legacy area. */
#define STUB_XSAVE_SW_RESERVED_OFF 464
#define STUB_XSAVE_HDR_OFF 512
#define STUB_FP_XSTATE_MAGIC1 0x46505853u
#define STUB_FP_XSTATE_MAGIC2 0x46505845u

#endif /* PLATFORM_SYSTRAP_STUB_ABI_H_ */
