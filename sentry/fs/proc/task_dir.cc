// Per-process files. Reading another task's state: the fields marked "task
// thread" in kernel/task.h (name, credentials, FD table, FS context, mm
// pointer) are read here from the reader's thread, as Linux reads them
// under task_lock; the kernel has no lock for them yet, so a reader racing
// with the task changing them (setuid, unshare, exit) may see either value.
// For /proc/self the reader is the task itself and there is no race.
#include "sentry/fs/proc/task_dir.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "platform/sleep_state.h"
#include "sentry/fs/pipe/pipe_file.h"
#include "sentry/fs/proc/format.h"
#include "sentry/fs/proc/net.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::proc {
namespace {

using kernel::Task;
using kernel::ThreadGroup;
using Gen = kernfs::GeneratedFile::Generator;

constexpr uint64_t kPage = 4096;

// Whether `t` still holds its TID: it runs, or it is a process's leader
// that exited and is not yet reaped (a zombie keeps its PID and its
// /proc/PID until then).
bool Alive(Task* t) {
  return t->kernel().root_pid_namespace().Names(t->tid(), t);
}

// The files of a /proc/PID directory hold their task weakly: once it is
// reaped (its object freed), reads fail with ESRCH (proc_single_show's
// get_pid_task) and links and lookups with ENOENT.
KResult<std::shared_ptr<Task>> Held(const std::weak_ptr<Task>& w,
                                    Errno gone = kESRCH) {
  std::shared_ptr<Task> t = w.lock();
  if (t == nullptr) return gone;
  return t;
}

// Whether `t` holds its TID and its run loop has not ended: its mm, FD
// table and FS context may be read (a zombie has none, as Linux's exit_mm,
// exit_files and exit_fs clear them).
bool Running(Task* t) {
  if (!Alive(t)) return false;
  for (Task* th : t->thread_group().Tasks()) {
    if (th == t) return true;
  }
  return false;
}

// The threads /proc/PID/task lists, by TID: the running ones, and the
// leader while it is a zombie (it stays in Linux's thread list until the
// process is reaped).
std::vector<std::shared_ptr<Task>> Threads(ThreadGroup& tg) {
  std::vector<std::shared_ptr<Task>> out;
  for (std::shared_ptr<Task>& th : tg.TaskRefs()) {
    if (Alive(th.get())) out.push_back(std::move(th));
  }
  std::shared_ptr<Task> leader =
      tg.kernel().root_pid_namespace().Lookup(tg.tgid());
  if (leader != nullptr && &leader->thread_group() == &tg &&
      std::find(out.begin(), out.end(), leader) == out.end()) {
    out.push_back(std::move(leader));
  }
  std::sort(out.begin(), out.end(),
            [](const std::shared_ptr<Task>& a, const std::shared_ptr<Task>& b) {
              return a->tid() < b->tid();
            });
  return out;
}

// The thread count Linux shows (signal->nr_threads): the running threads,
// and the leader while it is a zombie (it counts until it is reaped).
size_t ThreadCount(ThreadGroup& tg) {
  size_t n = tg.TaskCount();
  std::shared_ptr<Task> leader =
      tg.kernel().root_pid_namespace().Lookup(tg.tgid());
  if (leader != nullptr && &leader->thread_group() == &tg &&
      !Running(leader.get())) {
    ++n;
  }
  return n;
}

// comm: PR_SET_NAME's name, else the executable's base name (at most 15
// bytes, TASK_COMM_LEN - 1).
std::string Comm(Task* t) {
  std::string name = t->name();
  if (name.empty()) {
    std::string exe = t->thread_group().exe_path();
    size_t slash = exe.rfind('/');
    name = slash == std::string::npos ? exe : exe.substr(slash + 1);
  }
  if (name.size() > 15) name.resize(15);
  return name;
}

// The task's address space while it runs (null once it exits: the run loop
// drops it before the TID is released).
std::shared_ptr<mm::MemoryManager> Mm(Task* t) {
  if (!Running(t)) return nullptr;
  return t->MmRefLocked();  // null if it exits meanwhile
}

char StateChar(Task* t) {
  // EXIT_ZOMBIE: the task's run loop has ended (a process's leader stays
  // so until reaped, even while other threads run). Not before: a task
  // still leaving after exit_group is not yet waitable.
  if (!Running(t)) return 'Z';
  if (kernel::TaskStopped(*t)) return 'T';  // a group stop
  // R while it runs guest code or the non-blocking part of a syscall (the
  // reader itself), S or D while a blocking wait marks it.
  switch (t->sleep_state()) {
    case platform::SleepState::kInterruptible:
      return 'S';
    case platform::SleepState::kUninterruptible:
      return 'D';
    case platform::SleepState::kRunning:
      break;
  }
  return 'R';
}

const char* StateName(char c) {
  switch (c) {
    case 'R':
      return "R (running)";
    case 'Z':
      return "Z (zombie)";
    case 'T':
      return "T (stopped)";
    case 'D':
      return "D (disk sleep)";
    default:
      return "S (sleeping)";
  }
}

// Bytes of the VMAs selected by `pred`.
template <typename Pred>
uint64_t VmaBytes(const std::vector<mm::VmaInfo>& vmas, Pred pred) {
  uint64_t n = 0;
  for (const mm::VmaInfo& v : vmas) {
    if (pred(v)) n += v.end - v.start;
  }
  return n;
}

struct MemFigures {
  uint64_t size = 0, rss = 0, data = 0, stack = 0, text = 0, lib = 0;
};

MemFigures Memory(mm::MemoryManager& m) {
  std::vector<mm::VmaInfo> vmas = m.Vmas();
  MemFigures f;
  f.size = m.MappedBytes();
  f.rss = m.BackedBytes();
  // Linux: data_vm = VM_WRITE & ~VM_SHARED & ~VM_STACK; stack_vm =
  // VM_STACK (grows-down); exec_vm = VM_EXEC & ~VM_WRITE & ~VM_STACK.
  f.data = VmaBytes(vmas, [](const mm::VmaInfo& v) {
    return (v.prot & PROT_WRITE) && !v.shared && !v.grows_down &&
           v.name != "[stack]";
  });
  f.stack = VmaBytes(vmas, [](const mm::VmaInfo& v) {
    return v.grows_down || v.name == "[stack]";
  });
  uint64_t exec = VmaBytes(vmas, [](const mm::VmaInfo& v) {
    return (v.prot & PROT_EXEC) && !(v.prot & PROT_WRITE) && !v.grows_down;
  });
  // task_mem/task_statm: text is the program's code range (end_code and
  // start_code page-rounded), lib the rest of the executable mappings.
  mm::MemoryManager::ProcessImage img = m.process_image();
  if (img.end_code > img.start_code) {
    f.text = ((img.end_code + kPage - 1) & ~(kPage - 1)) -
             (img.start_code & ~(kPage - 1));
  } else {
    f.text = exec;
  }
  f.lib = exec > f.text ? exec - f.text : 0;
  return f;
}

// Signals ignored and caught, as bit masks (bit sig-1).
void SignalMasks(ThreadGroup& tg, uint64_t* ignored, uint64_t* caught) {
  *ignored = *caught = 0;
  for (int sig = 1; sig <= abi::kNumSignals; ++sig) {
    uint64_t h = tg.GetAction(sig).handler;
    if (h == 1) {  // SIG_IGN
      *ignored |= uint64_t{1} << (sig - 1);
    } else if (h != 0) {
      *caught |= uint64_t{1} << (sig - 1);
    }
  }
}

uint32_t NumCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::vector<int> OpenFds(Task* t);

// FDSize: the size of the descriptor table's arrays (fdt->max_fds): 64
// (NR_OPEN_DEFAULT) until a descriptor at or above it is used, then
// alloc_fdtable's size for the highest descriptor: a power of two
// multiple of 128 (1 KiB of pointers). Linux never shrinks it after a
// close; here it follows the highest descriptor open now.
uint32_t FdTableSize(Task* t) {
  if (!Running(t)) return 0;  // exit_files: no table
  std::vector<int> fds = OpenFds(t);
  if (fds.empty() || fds.back() < 64) return 64;
  uint64_t nr = static_cast<uint64_t>(fds.back()) / 128;
  uint64_t pow2 = 1;
  while (pow2 < nr + 1) pow2 <<= 1;
  return static_cast<uint32_t>(
      std::min<uint64_t>(pow2 * 128, vfs::FdTable::kNrOpen));
}

std::string StatusText(Task* t) {
  ThreadGroup& tg = t->thread_group();
  std::shared_ptr<const kernel::Credentials> creds = t->CredsRef();
  const kernel::Credentials& c = *creds;  // another task: a snapshot
  std::shared_ptr<ThreadGroup> parent = tg.parent_ref();
  char state = StateChar(t);
  std::string out;
  absl::StrAppendFormat(&out, "Name:\t%s\n", Comm(t));
  if (std::shared_ptr<vfs::FsContext> fs = t->FsRefLocked();
      Running(t) && fs != nullptr) {
    absl::StrAppendFormat(&out, "Umask:\t%04o\n", fs->umask());
  }
  absl::StrAppendFormat(&out, "State:\t%s\n", StateName(state));
  absl::StrAppendFormat(&out, "Tgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\n",
                        tg.tgid(), t->tid(), parent ? parent->tgid() : 0);
  out += "TracerPid:\t0\n";
  absl::StrAppendFormat(&out, "Uid:\t%u\t%u\t%u\t%u\n", c.ruid, c.euid, c.suid,
                        c.fsuid);
  absl::StrAppendFormat(&out, "Gid:\t%u\t%u\t%u\t%u\n", c.rgid, c.egid, c.sgid,
                        c.fsgid);
  absl::StrAppendFormat(&out, "FDSize:\t%u\n", FdTableSize(t));
  // The groups separated by spaces, then one trailing space (even with
  // none), as task_state prints them.
  out += "Groups:\t";
  for (size_t i = 0; i < c.groups.size(); ++i) {
    absl::StrAppendFormat(&out, "%s%u", i ? " " : "", c.groups[i]);
  }
  out += " \n";
  absl::StrAppendFormat(&out,
                        "NStgid:\t%d\nNSpid:\t%d\nNSpgid:\t%d\nNSsid:\t%d\n",
                        tg.tgid(), t->tid(), tg.pgid(), tg.sid());
  if (std::shared_ptr<mm::MemoryManager> m = Mm(t)) {
    MemFigures f = Memory(*m);
    auto kb = [&out](const char* name, uint64_t bytes) {
      absl::StrAppendFormat(&out, "%s:\t%8u kB\n", name, bytes / 1024);
    };
    kb("VmPeak", f.size);
    kb("VmSize", f.size);
    kb("VmLck", 0);
    kb("VmPin", 0);
    kb("VmHWM", f.rss);
    kb("VmRSS", f.rss);
    kb("RssAnon", f.rss);
    kb("RssFile", 0);
    kb("RssShmem", 0);
    kb("VmData", f.data);
    kb("VmStk", f.stack);
    kb("VmExe", f.text);
    kb("VmLib", f.lib);
    kb("VmPTE", 0);
    kb("VmSwap", 0);
  }
  absl::StrAppendFormat(&out, "Threads:\t%u\n", ThreadCount(tg));
  const kernel::SignalStatus sig = kernel::SignalStatusOf(*t);
  absl::StrAppendFormat(&out, "SigQ:\t%u/%u\n", sig.queued,
                        tg.GetLimit(RLIMIT_SIGPENDING).rlim_cur);
  uint64_t ign, cgt;
  SignalMasks(tg, &ign, &cgt);
  absl::StrAppendFormat(&out, "SigPnd:\t%016x\nShdPnd:\t%016x\n", sig.pending,
                        sig.shared);
  absl::StrAppendFormat(&out,
                        "SigBlk:\t%016x\nSigIgn:\t%016x\nSigCgt:\t%016x\n",
                        sig.blocked, ign, cgt);
  absl::StrAppendFormat(&out,
                        "CapInh:\t%016x\nCapPrm:\t%016x\nCapEff:\t%016x\n"
                        "CapBnd:\t%016x\nCapAmb:\t%016x\n",
                        c.cap_inheritable, c.cap_permitted, c.cap_effective,
                        c.cap_bounding, c.cap_ambient);
  absl::StrAppendFormat(&out, "NoNewPrivs:\t%d\n", t->no_new_privs() ? 1 : 0);
  out += "Seccomp:\t0\nSeccomp_filters:\t0\n";
  uint32_t ncpus = NumCpus();
  std::string mask;
  for (uint32_t i = 0; i < (ncpus + 3) / 4; ++i) {
    uint32_t bits = std::min<uint32_t>(4, ncpus - 4 * i);
    mask.insert(mask.begin(), "0123456789abcdef"[(1u << bits) - 1]);
  }
  absl::StrAppendFormat(&out, "Cpus_allowed:\t%s\n", mask);
  if (ncpus == 1) {
    out += "Cpus_allowed_list:\t0\n";
  } else {
    absl::StrAppendFormat(&out, "Cpus_allowed_list:\t0-%u\n", ncpus - 1);
  }
  out += "Mems_allowed:\t1\nMems_allowed_list:\t0\n";
  out += "voluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n";
  return out;
}

// /proc/pid/stat (fs/proc/array.c do_task_stat): 52 fields.
std::string StatText(Task* t, bool whole) {
  ThreadGroup& tg = t->thread_group();
  std::shared_ptr<ThreadGroup> parent = tg.parent_ref();
  MemFigures f;
  uint64_t brk = 0;
  mm::MemoryManager::ProcessImage img;
  if (std::shared_ptr<mm::MemoryManager> m = Mm(t)) {
    f = Memory(*m);
    brk = m->brk_start();
    img = m->process_image();
  }
  uint64_t ign, cgt;
  SignalMasks(tg, &ign, &cgt);
  abi::Rlimit64 rss = tg.GetLimit(RLIMIT_RSS);
  const kernel::StatTimes times = kernel::ProcStatTimes(*t, whole);
  // task_prio(): 20 + nice for the fair classes, -1 - rt_priority for rt.
  const kernel::SchedAttr sched = t->sched().Get();
  const int prio = kernel::IsRtPolicy(sched.policy) ? -1 - sched.rt_priority
                                                    : 20 + sched.nice;
  // Fields 1-9: pid comm state ppid pgrp session tty_nr tpgid flags
  // (PF_FORKNOEXEC|PF_RANDOMIZE); 10-13 faults (not counted); 14-17 utime
  // stime cutime cstime (the process's, or the thread's in task/TID);
  // 18-25: priority nice num_threads itrealvalue starttime vsize rss rsslim;
  // 26-30 startcode endcode startstack kstkesp kstkeip (the last two 0:
  // Linux shows them only for a dying task); 31-34 signal blocked
  // sigignore sigcatch; 35-37 wchan nswap cnswap;
  // 38-46 exit_signal processor rt_priority policy delayacct guest_time
  // cguest_time start_data end_data; 47-52 start_brk arg_start arg_end
  // env_start env_end exit_code.
  std::string out = absl::StrFormat(
      "%d (%s) %c %d %d %d 0 -1 4194560 0 0 0 0 %d %d %d %d %d %d %u 0 0 %u "
      "%u %u ",
      t->tid(), Comm(t), StateChar(t), parent ? parent->tgid() : 0, tg.pgid(),
      tg.sid(), times.utime, times.stime, times.cutime, times.cstime, prio,
      sched.nice, ThreadCount(tg), f.size, f.rss / kPage, rss.rlim_cur);
  absl::StrAppendFormat(&out, "%u %u %u 0 0 0 %u %u %u 0 0 0 ", img.start_code,
                        img.end_code, img.start_stack, t->signal_mask(), ign,
                        cgt);
  absl::StrAppendFormat(&out, "17 0 %d %d 0 0 0 %u %u %u %u %u %u %u 0\n",
                        sched.rt_priority, sched.policy, img.start_data,
                        img.end_data, brk, img.arg_start, img.arg_end,
                        img.env_start, img.env_end);
  return out;
}

std::string StatmText(Task* t) {
  MemFigures f;
  if (std::shared_ptr<mm::MemoryManager> m = Mm(t)) f = Memory(*m);
  return absl::StrFormat("%u %u 0 %u 0 %u 0\n", f.size / kPage, f.rss / kPage,
                         f.text / kPage, (f.data + f.stack) / kPage);
}

// Guest memory [start, end) of `m`, read as the kernel (access_remote_vm
// with FOLL_FORCE); stops at the first unreadable byte.
std::string ReadRange(mm::MemoryManager& m, uintptr_t start, uintptr_t end) {
  if (end <= start) return "";
  std::string out(end - start, '\0');
  KResult<size_t> n = m.ForceCopyIn(start, out.data(), out.size());
  out.resize(n.ok() ? *n : 0);
  return out;
}

// /proc/pid/cmdline (get_mm_cmdline): the argv strings; if the process
// overwrote the final NUL (setproctitle), the text runs on into the
// environment area up to the first NUL, at most a page.
std::string CmdlineText(Task* t) {
  std::shared_ptr<mm::MemoryManager> m = Mm(t);
  if (m == nullptr) return "";
  mm::MemoryManager::ProcessImage img = m->process_image();
  std::string args = ReadRange(*m, img.arg_start, img.arg_end);
  if (!args.empty() && args.back() != '\0') {
    std::string more = ReadRange(*m, img.arg_end, img.arg_end + kPage);
    size_t nul = more.find('\0');
    args += more.substr(0, nul);
  }
  return args;
}

std::string EnvironText(Task* t) {
  std::shared_ptr<mm::MemoryManager> m = Mm(t);
  if (m == nullptr) return "";
  mm::MemoryManager::ProcessImage img = m->process_image();
  return ReadRange(*m, img.env_start, img.env_end);
}

std::string AuxvText(Task* t) {
  std::shared_ptr<mm::MemoryManager> m = Mm(t);
  if (m == nullptr) return "";
  std::vector<std::pair<uint64_t, uint64_t>> auxv = m->process_image().auxv;
  std::string out(auxv.size() * 16, '\0');
  for (size_t i = 0; i < auxv.size(); ++i) {
    memcpy(out.data() + 16 * i, &auxv[i].first, 8);
    memcpy(out.data() + 16 * i + 8, &auxv[i].second, 8);
  }
  return out;
}

// /proc/pid/smaps (show_smap): each VMA's maps line, then its counters.
// Resident pages come from Mincore (this mm's pages, or the file's cached
// pages for a file or shared mapping); they are counted as private dirty
// for private mappings and shared dirty for shared ones (no per-page
// dirty or sharing accounting yet), so Pss == Rss.
std::string SmapsText(Task* t) {
  std::shared_ptr<mm::MemoryManager> m = Mm(t);
  if (m == nullptr) return "";
  std::string out;
  std::vector<uint8_t> vec;
  for (const mm::VmaInfo& v : m->Vmas()) {
    out += FormatMapsLine(v);
    uint64_t pages = (v.end - v.start) / kPage, resident = 0;
    vec.assign(pages, 0);
    for (uint64_t done = 0; done < pages;) {
      KResult<size_t> n =
          m->Mincore(v.start + done * kPage, pages - done, vec.data() + done);
      if (!n.ok() || *n == 0) break;
      done += *n;
    }
    for (uint8_t b : vec) resident += b & 1;
    uint64_t rss = resident * kPage;
    bool anon_private = v.anonymous && !v.shared;
    struct {
      const char* name;
      uint64_t bytes;
    } lines[] = {{"Size", v.end - v.start},
                 {"KernelPageSize", kPage},
                 {"MMUPageSize", kPage},
                 {"Rss", rss},
                 {"Pss", rss},
                 {"Pss_Dirty", rss},
                 {"Shared_Clean", 0},
                 {"Shared_Dirty", v.shared ? rss : 0},
                 {"Private_Clean", 0},
                 {"Private_Dirty", v.shared ? 0 : rss},
                 {"Referenced", rss},
                 {"Anonymous", anon_private ? rss : 0},
                 {"LazyFree", 0},
                 {"AnonHugePages", 0},
                 {"ShmemPmdMapped", 0},
                 {"FilePmdMapped", 0},
                 {"Shared_Hugetlb", 0},
                 {"Private_Hugetlb", 0},
                 {"Swap", 0},
                 {"SwapPss", 0},
                 {"Locked", v.locked ? rss : 0}};
    for (const auto& l : lines) out += MeminfoLine(l.name, l.bytes / 1024);
    out += absl::StrFormat("THPeligible:    %8u\n", 0);
    absl::StrAppend(&out, "VmFlags: ", VmFlags(v), "\n");
  }
  return out;
}

// The reader's root, else the task's.
vfs::VirtualDentry ReaderRoot(const vfs::VirtualDentry& fallback) {
  if (Task* cur = Task::Current(); cur != nullptr) {
    vfs::VirtualDentry r = cur->fs().Root();
    if (r.ok()) return r;
  }
  return fallback;
}

vfs::VirtualDentry TaskRoot(Task* t) {
  if (!Running(t)) return {};
  std::shared_ptr<vfs::FsContext> fs = t->FsRefLocked();
  return fs != nullptr ? fs->Root() : vfs::VirtualDentry{};
}

KResult<std::string> LinkTarget(Task* t, bool cwd) {
  if (!Running(t)) return kENOENT;
  std::shared_ptr<vfs::FsContext> fs = t->FsRefLocked();
  if (fs == nullptr) return kENOENT;
  vfs::VirtualDentry root = fs->Root();
  if (!root.ok()) return kENOENT;
  return PathForReader(cwd ? fs->Cwd() : root, root);
}

// Where the magic links cwd and root jump.
KResult<vfs::VirtualDentry> LinkLocation(Task* t, bool cwd) {
  if (!Running(t)) return kENOENT;
  std::shared_ptr<vfs::FsContext> fs = t->FsRefLocked();
  if (fs == nullptr) return kENOENT;
  vfs::VirtualDentry vd = cwd ? fs->Cwd() : fs->Root();
  if (!vd.ok()) return kENOENT;
  return vd;
}

// The fd numbers open in `t`, ascending.
std::vector<int> OpenFds(Task* t) {
  std::vector<int> fds;
  if (!Running(t)) return fds;
  // Null while the task exits (its run loop drops the table before the
  // TID is released).
  std::shared_ptr<vfs::FdTable> table = t->FdTableRefLocked();
  if (table == nullptr) return fds;
  size_t want = table->Count();
  for (int fd = 0;
       fds.size() < want && fd < static_cast<int>(vfs::FdTable::kNrOpen);
       ++fd) {
    if (table->Get(fd) != nullptr) fds.push_back(fd);
  }
  return fds;
}

KResult<vfs::FileRef> FileOf(Task* t, std::string_view name, bool* cloexec) {
  int fd;
  if (!absl::SimpleAtoi(absl::string_view(name.data(), name.size()), &fd) ||
      fd < 0 || !Running(t))
    return kENOENT;
  if (absl::StrCat(fd) != name) return kENOENT;  // "01", "+1"
  std::shared_ptr<vfs::FdTable> table = t->FdTableRefLocked();
  if (table == nullptr) return kENOENT;  // exiting
  KResult<vfs::FileRef> f = table->Get(fd, cloexec);
  if (!f.ok() || *f == nullptr) return kENOENT;
  return f;
}

// What readlink of /proc/pid/fd/N gives: d_path of the file's location
// (its file system's d_dname for a pipe(2) end or a socket: "pipe:[N]",
// "socket:[N]"); for a file without one, what its stat says.
std::string FdLinkText(Task* t, const vfs::FileRef& f) {
  if (const vfs::VirtualDentry* where = f->location(); where != nullptr) {
    return PathForReader(*where, TaskRoot(t));
  }
  KResult<abi::Stat> st = f->Stat();
  uint64_t ino = st.ok() ? st->st_ino : 0;
  uint32_t type = st.ok() ? (st->st_mode & S_IFMT) : 0;
  if (type == S_IFIFO) return absl::StrCat("pipe:[", ino, "]");
  if (!f->AnonInodeName().empty()) {
    return "anon_inode:" + std::string(f->AnonInodeName());
  }
  if (type == S_IFSOCK) return absl::StrCat("socket:[", ino, "]");
  // The stdio the sandbox was handed (a host file the guest has no path
  // for), as gVisor shows it.
  return absl::StrCat("host:[", ino, "]");
}

std::string FdinfoText(const vfs::FileRef& f, bool cloexec) {
  KResult<int64_t> pos = f->Seek(0, SEEK_CUR);
  uint32_t flags = f->status_flags() | (cloexec ? O_CLOEXEC : 0);
  uint64_t mnt_id = 0, ino = 0;
  if (const vfs::VirtualDentry* where = f->location(); where != nullptr) {
    mnt_id = where->mount->id();  // pipefs's and sockfs's internal mounts too
    ino = where->dentry->inode().ino();
  } else if (KResult<abi::Stat> st = f->Stat(); st.ok()) {
    ino = st->st_ino;
  }
  return absl::StrFormat("pos:\t%d\nflags:\t0%o\nmnt_id:\t%u\nino:\t%u\n",
                         pos.ok() ? *pos : 0, flags, mnt_id, ino) +
         f->FdInfo();  // show_fdinfo
}

std::vector<uint64_t> FdNumbers(Task* t) {
  std::vector<int> fds = OpenFds(t);
  return std::vector<uint64_t>(fds.begin(), fds.end());
}

std::shared_ptr<kernfs::Dir> NewFdDir(kernfs::Filesystem& fs,
                                      std::weak_ptr<Task> w, bool info,
                                      uint32_t uid, uint32_t gid) {
  auto dir = std::make_shared<kernfs::Dir>(fs, 0500, uid, gid);
  kernfs::Filesystem* fsp = &fs;
  dir->SetDynamic(
      [w] {
        std::shared_ptr<Task> t = w.lock();
        return t != nullptr ? FdNumbers(t.get()) : std::vector<uint64_t>{};
      },
      [fsp, w, info, uid,
       gid](std::string_view name) -> KResult<std::shared_ptr<vfs::Inode>> {
        TRY(std::shared_ptr<Task> held, Held(w, kENOENT));
        Task* t = held.get();
        bool cloexec = false;
        TRY(vfs::FileRef f, FileOf(t, name, &cloexec));
        std::string n(name);
        if (info) {
          return std::shared_ptr<vfs::Inode>(
              std::make_shared<kernfs::GeneratedFile>(
                  *fsp, 0400,
                  [w, n]() -> KResult<std::string> {
                    TRY(std::shared_ptr<Task> t, Held(w));
                    bool cloexec = false;
                    TRY(vfs::FileRef f, FileOf(t.get(), n, &cloexec));
                    return FdinfoText(f, cloexec);
                  },
                  uid, gid));
        }
        uint32_t perm = (f->readable() ? 0500 : 0) | (f->writable() ? 0300 : 0);
        auto link = std::make_shared<kernfs::Symlink>(
            *fsp,
            [w, n]() -> KResult<std::string> {
              TRY(std::shared_ptr<Task> held, Held(w, kENOENT));
              Task* t = held.get();
              bool cloexec = false;
              TRY(vfs::FileRef f, FileOf(t, n, &cloexec));
              return FdLinkText(t, f);
            },
            uid, gid, perm);
        // proc_fd_link: a walk jumps to the open file's own location, so
        // opening the link opens that file again (any name it had may be
        // gone: memfds, unlinked files); a pipe(2) end's location is its
        // pipefs inode, whose open reopens the pipe (fifo_open). Files
        // with no location (host stdio) cannot be reached: ENOENT.
        link->SetJump([w, n]() -> KResult<vfs::VirtualDentry> {
          TRY(std::shared_ptr<Task> t, Held(w, kENOENT));
          bool cloexec = false;
          TRY(vfs::FileRef f, FileOf(t.get(), n, &cloexec));
          const vfs::VirtualDentry* where = f->location();
          if (where == nullptr) return kENOENT;
          return *where;
        });
        return std::shared_ptr<vfs::Inode>(std::move(link));
      });
  return dir;
}

std::shared_ptr<vfs::Inode> File(kernfs::Filesystem& fs, uint32_t perm,
                                 uint32_t uid, uint32_t gid, Gen gen) {
  return std::make_shared<kernfs::GeneratedFile>(fs, perm, std::move(gen), uid,
                                                 gid);
}

}  // namespace

std::string PathForReader(const vfs::VirtualDentry& vd,
                          const vfs::VirtualDentry& fallback_root) {
  // d_dname (pipes, sockets) needs no root.
  if (std::string n = vd.mount->fs().DName(*vd.dentry); !n.empty()) return n;
  vfs::VirtualDentry root = ReaderRoot(fallback_root);
  if (!root.ok()) return "/";
  return vfs::DPath(root, vd);  // a memfd's is "/memfd:NAME (deleted)"
}

std::string MountinfoText(const vfs::VirtualDentry& root, bool mountinfo) {
  if (!root.ok()) return "";
  struct Item {
    std::shared_ptr<vfs::Mount> mount;
    std::shared_ptr<vfs::Mount> parent;
    std::shared_ptr<vfs::Dentry> point;
  };
  std::vector<Item> items;
  {
    absl::ReaderMutexLock l(&vfs::MountLock());
    std::vector<std::shared_ptr<vfs::Mount>> stack = {root.mount};
    while (!stack.empty()) {
      std::shared_ptr<vfs::Mount> m = std::move(stack.back());
      stack.pop_back();
      items.push_back({m, m->ParentLocked(), m->MountPointLocked()});
      for (auto& c : m->ChildrenLocked()) stack.push_back(std::move(c));
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.mount->id() < b.mount->id();
  });
  std::string out;
  for (const Item& it : items) {
    MountEntry e;
    e.id = it.mount->id();
    e.parent_id = it.parent ? it.parent->id() : e.id;
    if (it.mount == root.mount) {
      e.mount_point = "/";
    } else {
      KResult<std::string> p = vfs::GetCwd(root, {it.parent, it.point});
      if (!p.ok()) continue;  // no longer reachable
      e.mount_point = *p;
    }
    uint64_t dev = it.mount->fs().dev();
    e.dev_major = major(dev);
    e.dev_minor = minor(dev);
    e.root = it.mount->RootPath();
    e.flags = it.mount->flags();
    e.fs_type = std::string(it.mount->fs().type_name());
    e.source = it.mount->source();
    e.propagation = it.mount->PropagationFields();
    e.fs_options = it.mount->fs_options();
    out += mountinfo ? FormatMountinfoLine(e) : FormatMountsLine(e);
  }
  return out;
}

std::shared_ptr<vfs::Inode> NewTaskDir(kernfs::Filesystem& fs,
                                       std::shared_ptr<Task> task,
                                       bool thread_dir) {
  // Every file holds the task weakly (Held): the directory and its open
  // files may outlive it.
  const std::weak_ptr<Task> w = task;
  std::shared_ptr<const kernel::Credentials> creds = task->CredsRef();
  const kernel::Credentials& c = *creds;  // another task: a snapshot
  uint32_t uid = c.euid, gid = c.egid;
  auto dir = std::make_shared<kernfs::Dir>(fs, 0555, uid, gid);
  dir->Add("status", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return StatusText(t);
           }));
  dir->Add("stat",
           File(fs, 0444, uid, gid, [w, thread_dir]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             return StatText(held.get(), !thread_dir);
           }));
  if (!thread_dir) {
    // The process's POSIX timers (kernel/timers.h).
    dir->Add("timers", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
               TRY(std::shared_ptr<Task> held, Held(w));
               return held->thread_group().timers().ProcText();
             }));
  }
  dir->Add("statm", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return StatmText(t);
           }));
  dir->Add("cmdline", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return CmdlineText(t);
           }));
  dir->Add("environ", File(fs, 0400, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return EnvironText(t);
           }));
  dir->Add("auxv", File(fs, 0400, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return AuxvText(t);
           }));
  auto comm = std::make_shared<kernfs::GeneratedFile>(
      fs, 0644,
      [w]() -> KResult<std::string> {
        TRY(std::shared_ptr<Task> held, Held(w));
        Task* t = held.get();
        return Comm(t) + "\n";
      },
      uid, gid);
  // comm_write: the first 15 bytes, as written (a newline included), for
  // the writer's own thread group only (EINVAL for others). The name is a
  // task-thread field, so only the writer's own task is renamed here; a
  // write to a sibling thread's comm is refused with EINVAL too.
  comm->SetWriter([w](std::string_view data) -> KResult<size_t> {
    TRY(std::shared_ptr<Task> held, Held(w));
    Task* t = held.get();
    if (Task::Current() != t) return kEINVAL;
    std::string name(data.substr(0, 15));
    name = name.c_str();  // up to a NUL, as set_task_comm's strscpy
    t->set_name(std::move(name));
    return data.size();
  });
  dir->Add("comm", comm);
  dir->Add("maps", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             std::shared_ptr<mm::MemoryManager> m = Mm(t);
             std::string out;
             if (m == nullptr) return out;
             for (const mm::VmaInfo& v : m->Vmas()) out += FormatMapsLine(v);
             return out;
           }));
  dir->Add("smaps", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return SmapsText(t);
           }));
  dir->Add("limits", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return FormatLimits(t->thread_group().limits());
           }));
  dir->Add("mounts", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return MountinfoText(TaskRoot(t), false);
           }));
  dir->Add("mountinfo", File(fs, 0444, uid, gid, [w]() -> KResult<std::string> {
             TRY(std::shared_ptr<Task> held, Held(w));
             Task* t = held.get();
             return MountinfoText(TaskRoot(t), true);
           }));
  // exe is a magic link (proc_exe_link): to the executable's location
  // (mm->exe_file), read as d_path (" (deleted)" once unlinked).
  auto exe = std::make_shared<kernfs::Symlink>(
      fs,
      [w]() -> KResult<std::string> {
        TRY(std::shared_ptr<Task> held, Held(w));
        Task* t = held.get();
        if (!Alive(t)) return kENOENT;
        vfs::VirtualDentry vd = t->thread_group().exe_file();
        if (!vd.ok()) {
          // A zombie has no mm (ENOENT); a task started without a file
          // (unit tests) has its path only.
          if (t->thread_group().exit_status().has_value()) return kENOENT;
          return t->thread_group().exe_path();
        }
        return PathForReader(vd, TaskRoot(t));
      },
      uid, gid);
  exe->SetJump([w]() -> KResult<vfs::VirtualDentry> {
    TRY(std::shared_ptr<Task> held, Held(w, kENOENT));
    Task* t = held.get();
    if (!Alive(t)) return kENOENT;
    vfs::VirtualDentry vd = t->thread_group().exe_file();
    if (!vd.ok()) return kENOENT;
    return vd;
  });
  dir->Add("exe", std::move(exe));
  // cwd and root are magic links (proc_cwd_link, proc_root_link).
  auto cwd = std::make_shared<kernfs::Symlink>(
      fs,
      [w]() -> KResult<std::string> {
        TRY(std::shared_ptr<Task> t, Held(w, kENOENT));
        return LinkTarget(t.get(), true);
      },
      uid, gid);
  cwd->SetJump([w]() -> KResult<vfs::VirtualDentry> {
    TRY(std::shared_ptr<Task> t, Held(w, kENOENT));
    return LinkLocation(t.get(), true);
  });
  dir->Add("cwd", std::move(cwd));
  auto root = std::make_shared<kernfs::Symlink>(
      fs,
      [w]() -> KResult<std::string> {
        TRY(std::shared_ptr<Task> t, Held(w, kENOENT));
        return LinkTarget(t.get(), false);
      },
      uid, gid);
  root->SetJump([w]() -> KResult<vfs::VirtualDentry> {
    TRY(std::shared_ptr<Task> t, Held(w, kENOENT));
    return LinkLocation(t.get(), false);
  });
  dir->Add("root", std::move(root));
  dir->Add("fd", NewFdDir(fs, w, false, uid, gid));
  dir->Add("fdinfo", NewFdDir(fs, w, true, uid, gid));
  dir->Add("net", NewNetDir(fs));
  if (!thread_dir) {
    auto tasks = std::make_shared<kernfs::Dir>(fs, 0555, uid, gid);
    kernfs::Filesystem* fsp = &fs;
    tasks->SetDynamic(
        [w] {
          std::vector<uint64_t> tids;
          std::shared_ptr<Task> t = w.lock();
          if (t == nullptr) return tids;
          for (const std::shared_ptr<Task>& th : Threads(t->thread_group())) {
            tids.push_back(th->tid());
          }
          return tids;
        },
        [fsp,
         w](std::string_view name) -> KResult<std::shared_ptr<vfs::Inode>> {
          TRY(std::shared_ptr<Task> t, Held(w, kENOENT));
          for (const std::shared_ptr<Task>& th : Threads(t->thread_group())) {
            if (absl::StrCat(th->tid()) == name) {
              return NewTaskDir(*fsp, th, true);
            }
          }
          return kENOENT;
        });
    dir->Add("task", tasks);
  }
  return dir;
}

}  // namespace sandbox::fs::proc
