// Task::Execve: the commit of execve(2), Linux's begin_new_exec() and
// start_thread(). The handler (sentry/syscalls/exec.cc) has decoded and
// checked the arguments and loaded the image into a new address space;
// from here on the process is changed for good.
#include <utility>
#include <vector>

#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {

KResult<void> Task::Execve(ExecImage image) {
  // de_thread first: it fails only if the process is being killed anyway
  // (then nothing changes and the run loop ends the task).
  ThreadGroup& tg = thread_group();
  if (!tg.DeThread(*this)) return kEINTR;
  tg.timers().OnExec(*this);  // exit_itimers, flush_itimer_signals
  set_mm(std::move(image.mm));
  // unshare_files(), then the close-on-exec descriptors (closed as the
  // vector goes, with no lock held).
  UnshareFdTable();
  { std::vector<vfs::FileRef> closed = fd_table().RemoveCloexec(); }
  tg.FlushSignalHandlers(/*force_default=*/false);
  set_alt_stack({});
  set_name(std::move(image.comm));
  tg.set_exe_path(std::move(image.exe_path));
  tg.set_exe_file(std::move(image.exe_file));
  // Dumpable unless unreadable or a secure exec (suid_dumpable is 0), then
  // commit_creds(), which also clears it (and the parent-death signal)
  // when the permitted set grew.
  tg.set_dumpable(image.dumpable);
  if (image.secure) set_pdeathsig(0);
  CommitCreds(std::move(image.creds));
  // mm_release(): the old image's clear_child_tid and robust list no
  // longer apply (no other thread shares the old mm after de_thread, so
  // Linux writes nothing either).
  set_clear_child_tid(0);
  set_robust_list(0);
  // start_thread() after ELF_PLAT_INIT: every register 0, default FPU
  // state, fs_base 0.
  platform::CpuState& c = cpu();
  c.regs = {};
  c.regs.rip = image.entry;
  c.regs.rsp = image.stack_pointer;
  c.regs.eflags = 0x202;
  c.regs.cs = 0x33;
  c.regs.ss = 0x2b;
  c.fp.clear();
  c.fp_changed = true;
  return OkResult();
}

}  // namespace sandbox::kernel
