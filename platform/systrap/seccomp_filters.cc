#include "platform/systrap/seccomp_filters.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <map>
#include <string>
#include <utility>

namespace sandbox::platform {
namespace {

constexpr uint32_t kArgLo(int i) { return 16 + 8 * i; }
constexpr uint32_t kArgHi(int i) { return 20 + 8 * i; }

// A tiny BPF assembler with forward labels.
class Prog {
 public:
  void Ld(uint32_t off) { Emit(BPF_LD | BPF_W | BPF_ABS, off, "", ""); }
  void Ret(uint32_t v) { Emit(BPF_RET | BPF_K, v, "", ""); }
  // if (A == k) goto t else goto f; "" means the next instruction.
  void Jeq(uint32_t k, const std::string& t, const std::string& f) {
    Emit(BPF_JMP | BPF_JEQ | BPF_K, k, t, f);
  }
  void Jge(uint32_t k, const std::string& t, const std::string& f) {
    Emit(BPF_JMP | BPF_JGE | BPF_K, k, t, f);
  }
  void Label(const std::string& l) { labels_[l] = insns_.size(); }
  std::vector<sock_filter> Finish() {
    for (size_t i = 0; i < insns_.size(); ++i) {
      auto fix = [&](const std::string& l) -> uint8_t {
        if (l.empty()) return 0;
        size_t target = labels_.at(l);
        return static_cast<uint8_t>(target - (i + 1));
      };
      insns_[i].jt = fix(targets_[i].first);
      insns_[i].jf = fix(targets_[i].second);
    }
    return insns_;
  }

 private:
  void Emit(uint16_t code, uint32_t k, const std::string& t,
            const std::string& f) {
    insns_.push_back(sock_filter{code, 0, 0, k});
    targets_.push_back({t, f});
  }
  std::vector<sock_filter> insns_;
  std::vector<std::pair<std::string, std::string>> targets_;
  std::map<std::string, size_t> labels_;
};

// Checks that a 64-bit value at (lo, hi) lies in [start, end), which must
// not cross a 4 GiB boundary; falls through on success.
void InRange(Prog& p, uint32_t lo, uint32_t hi, uint64_t start, uint64_t end,
             const std::string& fail) {
  p.Ld(hi);
  p.Jeq(static_cast<uint32_t>(start >> 32), "", fail);
  p.Ld(lo);
  p.Jge(static_cast<uint32_t>(start), "", fail);
  p.Jge(static_cast<uint32_t>(end), fail, "");
}

void Prologue(Prog& p, const StubFilterParams& sp) {
  p.Ld(offsetof(seccomp_data, arch));
  p.Jeq(AUDIT_ARCH_X86_64, "", "trap");
  InRange(p, offsetof(seccomp_data, instruction_pointer),
          offsetof(seccomp_data, instruction_pointer) + 4, sp.code_start,
          sp.code_end, "trap");
  p.Ld(offsetof(seccomp_data, nr));
}

// read(data_fd, ...) only: allows, else kills (no data pipe: kills).
void DataFdOnly(Prog& p, const StubFilterParams& sp) {
  if (sp.data_fd < 0) {
    p.Ret(SECCOMP_RET_KILL_PROCESS);
    return;
  }
  p.Ld(kArgHi(0));
  p.Jeq(0, "", "kill");
  p.Ld(kArgLo(0));
  p.Jeq(static_cast<uint32_t>(sp.data_fd), "allow", "kill");
}

void Epilogue(Prog& p) {
  p.Label("allow");
  p.Ret(SECCOMP_RET_ALLOW);
  p.Label("trap");
  p.Ret(SECCOMP_RET_TRAP);
  p.Label("kill");
  p.Ret(SECCOMP_RET_KILL_PROCESS);
}

}  // namespace

std::vector<sock_filter> StubProcessFilter(const StubFilterParams& sp) {
  Prog p;
  Prologue(p, sp);
  p.Jeq(SYS_mmap, "mmap", "");
  p.Jeq(SYS_munmap, "allow", "");
  p.Jeq(SYS_mprotect, "allow", "");
  p.Jeq(SYS_clone, "clone", "");
  p.Jeq(SYS_futex, "allow", "");
  p.Jeq(SYS_rt_sigreturn, "allow", "");
  p.Jeq(SYS_sched_yield, "allow", "");
  p.Jeq(SYS_arch_prctl, "allow", "");
  p.Jeq(SYS_sigaltstack, "allow", "");
  p.Jeq(SYS_seccomp, "allow", "");
  p.Jeq(SYS_exit_group, "allow", "");
  p.Jeq(SYS_write, "write", "");
  p.Jeq(SYS_read, "read", "");
  p.Jeq(SYS_prctl, "prctl", "kill");
  // Replies of the syscall thread; guest threads' own filter forbids write.
  p.Label("write");
  p.Ld(kArgHi(0));
  p.Jeq(0, "", "kill");
  p.Ld(kArgLo(0));
  p.Jeq(static_cast<uint32_t>(sp.reply_fd), "allow", "kill");
  // Guest-side copies (stub.c: assist) read the data pipe; the guest filter
  // allows the same read.
  p.Label("read");
  DataFdOnly(p, sp);
  p.Label("mmap");
  p.Ld(kArgLo(4));
  p.Jeq(static_cast<uint32_t>(sp.memfd), "", "kill");
  p.Ld(kArgLo(3));
  p.Jeq(MAP_SHARED | MAP_FIXED, "allow", "");
  p.Jeq(MAP_SHARED | MAP_FIXED | MAP_POPULATE, "allow", "kill");
  p.Label("clone");
  p.Ld(kArgHi(0));
  p.Jeq(0, "", "kill");
  p.Ld(kArgLo(0));
  p.Jeq(kStubThreadCloneFlags, "allow", "kill");
  p.Label("prctl");
  p.Ld(kArgLo(0));
  p.Jeq(59 /*PR_SET_SYSCALL_USER_DISPATCH*/, "allow", "kill");
  Epilogue(p);
  return p.Finish();
}

std::vector<sock_filter> StubGuestFilter(const StubFilterParams& sp) {
  Prog p;
  Prologue(p, sp);
  p.Jeq(SYS_futex, "futex", "");
  p.Jeq(SYS_rt_sigreturn, "allow", "");
  p.Jeq(SYS_sched_yield, "allow", "");
  p.Jeq(SYS_read, "read", "");
  p.Jeq(SYS_arch_prctl, "arch_prctl", "kill");
  // A guest that jumps here with its own registers reads the data pipe:
  // only bytes the Sentry queued for this same process, non-blocking.
  p.Label("read");
  DataFdOnly(p, sp);
  p.Label("futex");
  p.Ld(kArgHi(1));
  p.Jeq(0, "", "kill");
  p.Ld(kArgLo(1));
  p.Jeq(1 /*FUTEX_WAKE*/, "uaddr", "");
  p.Jeq(0 /*FUTEX_WAIT*/, "", "kill");
  p.Ld(kArgLo(3));  // no timeout
  p.Jeq(0, "", "kill");
  p.Ld(kArgHi(3));
  p.Jeq(0, "", "kill");
  p.Label("uaddr");
  InRange(p, kArgLo(0), kArgHi(0), sp.threads_start, sp.threads_end, "kill");
  p.Ret(SECCOMP_RET_ALLOW);
  p.Label("arch_prctl");
  p.Ld(kArgHi(0));
  p.Jeq(0, "", "kill");
  p.Ld(kArgLo(0));
  p.Jeq(0x1001 /*ARCH_SET_GS*/, "allow", "");
  p.Jeq(0x1002 /*ARCH_SET_FS*/, "allow", "");
  p.Jeq(0x1003 /*ARCH_GET_FS*/, "allow", "");
  p.Jeq(0x1004 /*ARCH_GET_GS*/, "allow", "kill");
  Epilogue(p);
  return p.Finish();
}

}  // namespace sandbox::platform
