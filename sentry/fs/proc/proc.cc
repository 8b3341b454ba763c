#include "sentry/fs/proc/proc.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/fs/kernfs/kernfs.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/proc/format.h"
#include "sentry/fs/proc/net.h"
#include "sentry/fs/proc/task_dir.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"

namespace sandbox::fs::proc {
namespace {

using kernel::Kernel;
using kernel::Task;
using kernel::ThreadId;
using Gen = kernfs::GeneratedFile::Generator;

std::shared_ptr<vfs::Inode> File(kernfs::Filesystem& fs, Gen gen,
                                 uint32_t perm = 0444) {
  return std::make_shared<kernfs::GeneratedFile>(fs, perm, std::move(gen));
}

std::shared_ptr<vfs::Inode> Fixed(kernfs::Filesystem& fs, std::string text,
                                  uint32_t perm = 0444) {
  return std::make_shared<kernfs::GeneratedFile>(fs, perm, std::move(text));
}

int NumCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

// Thread-group leaders alive, ascending.
std::vector<ThreadId> Tgids(Kernel& k) {
  std::vector<ThreadId> out;
  for (ThreadId tid : k.root_pid_namespace().Tids()) {
    std::shared_ptr<Task> t = k.root_pid_namespace().Lookup(tid);
    if (t != nullptr && t->thread_group().tgid() == tid) out.push_back(tid);
  }
  return out;
}

std::string StatText(Kernel& k) {
  int ncpus = NumCpus();
  std::string out = "cpu  0 0 0 0 0 0 0 0 0 0\n";
  for (int i = 0; i < ncpus; ++i) {
    absl::StrAppendFormat(&out, "cpu%d 0 0 0 0 0 0 0 0 0 0\n", i);
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t btime = now.tv_sec - k.UptimeNs() / 1000000000;
  absl::StrAppendFormat(&out,
                        "intr 0\nctxt 0\nbtime %d\nprocesses %u\n"
                        "procs_running 1\nprocs_blocked 0\n"
                        "softirq 0 0 0 0 0 0 0 0 0 0 0\n",
                        btime, k.root_pid_namespace().Tids().size());
  return out;
}

// The sandbox's memory (--memory), not the host's (Kernel::Memory).
std::string MeminfoText(const Kernel& k) {
  const Kernel::MemoryFigures m = k.Memory();
  return FormatMeminfo(m.total, m.free, m.free);
}

std::shared_ptr<kernfs::Dir> SysDir(kernfs::Filesystem& fs, Kernel& k,
                                    const std::string& boot_id) {
  const kernel::KernelOptions& o = k.options();
  auto kern = std::make_shared<kernfs::Dir>(fs, 0555);
  // As proc_dostring: the name up to its first NUL.
  kern->Add("hostname", File(
                            fs,
                            [kp = &k]() -> KResult<std::string> {
                              std::string s = kp->uts().hostname();
                              return s.substr(0, s.find('\0')) + "\n";
                            },
                            0644));
  kern->Add("domainname", File(
                              fs,
                              [kp = &k]() -> KResult<std::string> {
                                std::string s = kp->uts().domainname();
                                return s.substr(0, s.find('\0')) + "\n";
                              },
                              0644));
  kern->Add("osrelease", Fixed(fs, o.release + "\n"));
  kern->Add("ostype", Fixed(fs, "Linux\n"));
  kern->Add("version", Fixed(fs, o.version + "\n"));
  kern->Add("pid_max",
            Fixed(fs, absl::StrCat(kernel::PidNamespace::kMaxTid, "\n"), 0644));
  kern->Add("ngroups_max", Fixed(fs, "65536\n"));
  kern->Add("cap_last_cap", Fixed(fs, absl::StrCat(kernel::kCapLastCap, "\n")));
  auto random = std::make_shared<kernfs::Dir>(fs, 0555);
  random->Add("boot_id", Fixed(fs, boot_id + "\n"));
  random->Add("uuid", File(fs, []() -> KResult<std::string> {
                return NewUuid() + "\n";
              }));
  kern->Add("random", random);

  auto vm = std::make_shared<kernfs::Dir>(fs, 0555);
  vm->Add("overcommit_memory", Fixed(fs, "0\n", 0644));
  vm->Add("max_map_count",
          Fixed(fs, absl::StrCat(mm::MemoryManager::kMaxMapCount, "\n"), 0644));

  auto fsdir = std::make_shared<kernfs::Dir>(fs, 0555);
  fsdir->Add("pipe-max-size",
             Fixed(fs, absl::StrCat(pipe::kPipeMaxSize, "\n"), 0644));
  fsdir->Add("nr_open",
             Fixed(fs, absl::StrCat(vfs::FdTable::kNrOpen, "\n"), 0644));

  auto sys = std::make_shared<kernfs::Dir>(fs, 0555);
  sys->Add("kernel", kern);
  sys->Add("vm", vm);
  sys->Add("fs", fsdir);
  sys->Add("net", NewSysNetDir(fs));
  return sys;
}

}  // namespace

std::shared_ptr<vfs::Filesystem> NewProcFilesystem(Kernel& k) {
  auto fs = std::make_shared<kernfs::Filesystem>(
      "proc", kProcSuperMagic, kernfs::Filesystem::Absent::kLookupFails);
  kernfs::Filesystem* fsp = fs.get();
  Kernel* kp = &k;
  auto root = std::make_shared<kernfs::Dir>(*fs, 0555);
  root->Add("self", std::make_shared<kernfs::Symlink>(
                        *fs, []() -> KResult<std::string> {
                          Task* t = Task::Current();
                          if (t == nullptr) return kENOENT;
                          return absl::StrCat(t->thread_group().tgid());
                        }));
  root->Add(
      "thread-self",
      std::make_shared<kernfs::Symlink>(*fs, []() -> KResult<std::string> {
        Task* t = Task::Current();
        if (t == nullptr) return kENOENT;
        return absl::StrCat(t->thread_group().tgid(), "/task/", t->tid());
      }));
  root->Add("cpuinfo", File(*fs, [kp]() -> KResult<std::string> {
              platform::Platform* p = kp->platform();
              if (p == nullptr) return std::string();
              return FormatCpuinfo(
                  [p](uint32_t leaf, uint32_t sub, uint32_t out[4]) {
                    p->Cpuid(leaf, sub, out);
                  },
                  NumCpus(), kp->options().host_cpu_flags);
            }));
  root->Add("meminfo", File(*fs, [kp]() -> KResult<std::string> {
              return MeminfoText(*kp);
            }));
  root->Add("stat", File(*fs, [kp]() -> KResult<std::string> {
              return StatText(*kp);
            }));
  root->Add("uptime", File(*fs, [kp]() -> KResult<std::string> {
              return FormatUptime(kp->UptimeNs(), 0);
            }));
  root->Add("loadavg", File(*fs, [kp]() -> KResult<std::string> {
              std::vector<ThreadId> tids = kp->root_pid_namespace().Tids();
              ThreadId last = tids.empty() ? 0 : tids.back();
              return FormatLoadavg(1, static_cast<int>(tids.size()), last);
            }));
  root->Add(
      "version",
      Fixed(*fs, absl::StrFormat("Linux version %s (sandbox@sandbox) "
                                 "(gcc version 12.2.0) %s\n",
                                 k.options().release, k.options().version)));
  // The kernel's registry (vfs/filesystem_type.h), read when read.
  root->Add("filesystems", File(*fs, [kp]() -> KResult<std::string> {
              return kp->filesystem_types().FilesystemsText();
            }));
  root->Add("mounts", std::make_shared<kernfs::Symlink>(*fs, "self/mounts"));
  root->Add("net", std::make_shared<kernfs::Symlink>(*fs, "self/net"));
  root->Add("sys", SysDir(*fs, k, NewUuid()));
  root->SetDynamic(
      [kp] {
        std::vector<uint64_t> tgids;
        for (ThreadId tgid : Tgids(*kp)) tgids.push_back(tgid);
        return tgids;
      },
      [kp, fsp](std::string_view name) -> KResult<std::shared_ptr<vfs::Inode>> {
        ThreadId tid;
        if (!absl::SimpleAtoi(absl::string_view(name.data(), name.size()),
                              &tid) ||
            absl::StrCat(tid) != name) {
          return kENOENT;
        }
        std::shared_ptr<Task> t = kp->root_pid_namespace().Lookup(tid);
        if (t == nullptr || t->thread_group().tgid() != tid) return kENOENT;
        return NewTaskDir(*fsp, t, false);
      });
  fs->SetRoot(root);
  return fs;
}

}  // namespace sandbox::fs::proc
