#include "sentry/fs/sys/sys.h"

#include <sched.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sentry/fs/kernfs/kernfs.h"

namespace sandbox::fs::sys {
namespace {

int NumCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::shared_ptr<kernfs::Dir> Chain(kernfs::Filesystem& fs,
                                   std::shared_ptr<kernfs::Dir> parent,
                                   std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto d = std::make_shared<kernfs::Dir>(fs, 0755);
    parent->Add(name, d);
    parent = d;
  }
  return parent;
}

}  // namespace

std::string CpuListText(int ncpus) {
  if (ncpus <= 1) return "0\n";
  return absl::StrCat("0-", ncpus - 1, "\n");
}

std::shared_ptr<vfs::Filesystem> NewSysFilesystem() {
  auto fs = std::make_shared<kernfs::Filesystem>("sysfs", kSysfsMagic);
  auto root = std::make_shared<kernfs::Dir>(*fs, 0555);
  std::string cpus = CpuListText(NumCpus());
  auto cpu = Chain(*fs, root, {"devices", "system", "cpu"});
  for (const char* name : {"online", "possible", "present"}) {
    cpu->Add(name, std::make_shared<kernfs::GeneratedFile>(*fs, 0444, cpus));
  }
  auto thp = Chain(*fs, root, {"kernel", "mm", "transparent_hugepage"});
  thp->Add("enabled", std::make_shared<kernfs::GeneratedFile>(
                          *fs, 0644, "always [madvise] never\n"));
  auto fsdir = std::make_shared<kernfs::Dir>(*fs, 0755);
  fsdir->Add("cgroup", std::make_shared<kernfs::Dir>(*fs, 0755));
  root->Add("fs", fsdir);
  fs->SetRoot(root);
  return fs;
}

}  // namespace sandbox::fs::sys
