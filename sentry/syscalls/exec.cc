// execve(2), execveat(2): replacing the process image.
//
// The order of checks is current Linux's (do_execveat_common; since 6.6
// alloc_bprm opens the file before the arguments are read, as the
// conformance test checks natively):
//  1. the path (getname): EFAULT, ENAMETOOLONG; "" is ENOENT unless
//     AT_EMPTY_PATH;
//  2. the flags (EINVAL), then the file (do_open_execat): the walk's errors,
//     ELOOP for a final symlink with AT_SYMLINK_NOFOLLOW, EACCES for a
//     non-regular file, a noexec mount or no execute permission, ETXTBSY
//     for a file open for writing (exe_file_deny_write_access: from here
//     on writing it is ETXTBSY, and the new image keeps it so; see
//     loader::LoadExecutable);
//  3. the argv, then envp pointer arrays: EFAULT (a NULL array is empty);
//  4. bprm_stack_limits: E2BIG when the pointers alone exceed the room for
//     arguments (a quarter of RLIMIT_STACK, at most 6 MiB, at least
//     ARG_MAX = 128 KiB);
//  5. the strings, as copy_strings: the filename, then envp, then argv,
//     each array from its last string to its first: EFAULT, E2BIG for a
//     string over MAX_ARG_STRLEN (128 KiB with its NUL) or when the total
//     exceeds the room;
//  6. the binary handlers (loader::LoadExecutable): ENOEXEC, "#!"
//     interpreters (ELOOP past 5 levels), PT_INTERP (its open errors,
//     ELIBBAD, EIO);
//  7. the point of no return: a failure after it (bad segments, no memory)
//     kills the process with SIGSEGV, as Linux's force_fatal_sig;
//  8. the commit: other threads killed and the leader's TID taken
//     (de_thread), the new address space, close-on-exec descriptors
//     closed, handlers reset (ignored stay ignored), the alternate signal
//     stack cleared, comm and /proc/self/exe updated, clear_child_tid and
//     the robust list forgotten, registers reset (rax 0).
//
// Set-user-ID and set-group-ID bits are ignored (every mount behaves as
// MS_NOSUID) and files have no capabilities; the credentials are then
// recomputed as Linux's cap_bprm_creds_from_file does for such a file
// (ExecCreds: root gets its bounding set back, others keep only their
// ambient set; AT_SECURE for an euid-0 exec by a non-root real user).
#include "sentry/loader/exec.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/loader/loader.h"
#include "sentry/loader/vfs_reader.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::syscalls {
namespace {

constexpr uint64_t kStkLim = 8 << 20;  // _STK_LIM

// bprm_stack_limits()'s room for argument strings and pointers.
uint64_t ArgRoom(Task& t) {
  const uint64_t rlim = t.thread_group().GetLimit(RLIMIT_STACK).rlim_cur;
  uint64_t limit = std::min<uint64_t>(kStkLim / 4 * 3, rlim / 4);
  return std::max<uint64_t>(limit, loader::kArgMax);
}

// count(): the pointers of a NULL-terminated guest array (empty for a NULL
// array). Stops with E2BIG past `max` entries (Linux counts on to
// MAX_ARG_STRINGS and then fails the room check; only an EFAULT further
// along than the room is reported differently).
KResult<std::vector<uint64_t>> CopyInPointers(Task& t, uint64_t array,
                                              uint64_t max) {
  std::vector<uint64_t> out;
  if (array == 0) return out;
  uint64_t chunk[64];
  for (uint64_t addr = array;;) {
    const size_t want = sizeof(chunk) - (addr % sizeof(chunk));
    TRY(size_t got, t.CopyIn(addr, chunk, want));
    if (got < sizeof(uint64_t)) return kEFAULT;
    for (size_t i = 0; i < got / sizeof(uint64_t); ++i) {
      if (chunk[i] == 0) return out;
      if (out.size() >= max) return kE2BIG;
      out.push_back(chunk[i]);
    }
    addr += got / sizeof(uint64_t) * sizeof(uint64_t);
    if (addr < array) return kEFAULT;  // wrapped
  }
}

// copy_strings(): from the last string to the first; each within
// MAX_ARG_STRLEN, all within *room.
KResult<std::vector<std::string>> CopyInStrings(
    Task& t, const std::vector<uint64_t>& ptrs, uint64_t* room) {
  std::vector<std::string> out(ptrs.size());
  for (size_t i = ptrs.size(); i-- > 0;) {
    KResult<std::string> s = t.CopyInString(ptrs[i], loader::kMaxArgStrLen);
    if (!s.ok()) return s.error() == kENAMETOOLONG ? kE2BIG : s.error();
    const uint64_t len = s->size() + 1;
    if (len > *room) return kE2BIG;
    *room -= len;
    out[i] = std::move(s).value();
  }
  return out;
}

// cap_bprm_creds_from_file() for a file without capabilities whose set-id
// bits are ignored, and bprm_fill_uid()'s suid/fsuid = euid. *secure is
// bprm->secureexec (AT_SECURE).
kernel::Credentials ExecCreds(const kernel::Credentials& old, bool* secure) {
  kernel::Credentials c = old;
  c.cap_permitted = 0;  // get_file_caps(): no file capabilities
  bool effective = false;
  if (!old.IsSecure(kernel::kSecureNoroot)) {  // handle_privileged_root()
    if (old.euid == 0 || old.ruid == 0) {
      c.cap_permitted = old.cap_bounding | old.cap_inheritable;
    }
    effective = old.euid == 0;
  }
  c.cap_permitted |= c.cap_ambient;
  c.cap_effective = effective ? c.cap_permitted : c.cap_ambient;
  *secure =
      old.ruid != 0 && (effective || (c.cap_permitted & ~c.cap_ambient) != 0);
  c.suid = c.fsuid = c.euid;
  c.sgid = c.fsgid = c.egid;
  c.securebits &= ~kernel::kSecureKeepCaps;
  return c;
}

// The comm a new image gets: the basename of bprm->filename, or for an
// execveat relative to a descriptor the file's own name (as Linux since
// 6.13; "/dev/fd/N" would give a bare number), cut to 15 bytes.
std::string NewComm(const std::string& filename, bool fd_path,
                    const vfs::VfsFile& file) {
  std::string comm;
  if (fd_path) {
    const vfs::Dentry& d = *file.vd().dentry;
    absl::ReaderMutexLock l(&d.fs().tree_mu());
    comm = d.name();
  } else {
    comm = filename.substr(filename.rfind('/') + 1);  // npos + 1 == 0
  }
  if (comm.size() > 15) comm.resize(15);
  return comm;
}

SyscallResult DoExecveat(Task& t, int32_t dirfd, UserCString path_arg,
                         UserAddr argv_addr, UserAddr envp_addr,
                         int32_t flags) {
  kernel::Kernel& k = t.kernel();
  if (k.platform() == nullptr) return kENOMEM;  // unit tests: no platform

  // 1. getname.
  TRY(std::string path, CopyInPath(t, path_arg));
  if (path.empty() && !(flags & AT_EMPTY_PATH)) return kENOENT;

  // 2. do_open_execat (in alloc_bprm).
  if ((flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) != 0) return kEINVAL;
  std::shared_ptr<vfs::VfsFile> file;
  {
    TRY(vfs::ResolveBase base,
        BaseAt(t, dirfd, path, (flags & AT_EMPTY_PATH) != 0));
    vfs::ResolveOptions opts;
    opts.follow_final = !(flags & AT_SYMLINK_NOFOLLOW);
    opts.allow_empty = (flags & AT_EMPTY_PATH) != 0;
    TRY(file, loader::OpenExecutable(base, path, opts));
  }
  TRY(loader::WriteDenial denial, loader::DenyWrite(file));

  // 3, 4. The pointer arrays and the room for them.
  uint64_t room = ArgRoom(t);
  TRY(std::vector<uint64_t> argv_ptrs,
      CopyInPointers(t, argv_addr.addr, room / 8));
  TRY(std::vector<uint64_t> envp_ptrs,
      CopyInPointers(t, envp_addr.addr, room / 8));
  const uint64_t ptr_size =
      (std::max<uint64_t>(argv_ptrs.size(), 1) + envp_ptrs.size()) * 8;
  if (room <= ptr_size) return kE2BIG;
  room -= ptr_size;

  // 5. bprm->filename, then the strings.
  const bool fd_path = dirfd != AT_FDCWD && path[0] != '/';
  bool path_inaccessible = false;
  std::string filename = path;
  if (fd_path) {
    filename = path.empty() ? absl::StrCat("/dev/fd/", dirfd)
                            : absl::StrCat("/dev/fd/", dirfd, "/", path);
    bool cloexec = false;
    if (t.fd_table().Get(dirfd, &cloexec).ok() && cloexec) {
      path_inaccessible = true;
    }
  }
  if (filename.size() + 1 > room) return kE2BIG;
  room -= filename.size() + 1;
  TRY(std::vector<std::string> envp, CopyInStrings(t, envp_ptrs, &room));
  TRY(std::vector<std::string> argv, CopyInStrings(t, argv_ptrs, &room));

  // 6. The binary handlers, into a new address space.
  platform::Platform& plat = *k.platform();
  const abi::Rlimit64 stack = t.thread_group().GetLimit(RLIMIT_STACK);
  TRY(std::unique_ptr<mm::MemoryManager> new_mm,
      mm::MemoryManager::Create(plat, {.randomize = t.mm().layout().randomize,
                                       .stack_rlimit = stack.rlim_cur}));
  const kernel::Credentials& creds = t.creds();
  bool secure = false;
  kernel::Credentials new_creds = ExecCreds(creds, &secure);
  vfs::VirtualDentry root = t.fs().Root();
  if (!root.ok()) return kENOENT;
  loader::ExecRequest req{{creds, root, t.fs().Cwd()}, file, filename};
  req.file_denial = std::move(denial);
  req.path_inaccessible = path_inaccessible;
  req.args.argv = std::move(argv);
  req.args.envp = std::move(envp);
  req.args.uid = creds.ruid;
  req.args.euid = creds.euid;
  req.args.gid = creds.rgid;
  req.args.egid = creds.egid;
  req.args.secure = secure;
  req.args.hwcap = loader::HwcapFromPlatform(plat);
  req.args.minsigstksz = loader::DefaultMinSigStkSz(plat.FpStateSize());
  std::string why;
  bool committed = false;
  KResult<loader::ExecResult> loaded =
      loader::LoadExecutable(*new_mm, std::move(req), &why, &committed);
  if (!loaded.ok()) {
    kernel::LogDebug("execve %s: %s%s%s", filename, loaded.error().name(),
                     why.empty() ? "" : ": ", why);
    if (committed) {
      // 7. Past the point of no return: SIGSEGV (force_fatal_sig).
      t.thread_group().ExitGroup(kernel::ExitStatus::Killed(SIGSEGV));
      return kEINTR;  // never seen: the run loop ends the task
    }
    return loaded.error();
  }

  // 8. The commit, by the kernel (Task::Execve).
  kernel::ExecImage image;
  image.mm = std::move(new_mm);
  image.comm = NewComm(filename, fd_path, *loaded->file);
  image.exe_path = loaded->exe_path;
  image.exe_file = loaded->file->vd();
  // would_dump(): an unreadable executable makes the process non-dumpable.
  const bool readable =
      vfs::CheckPermission(creds, vfs::kMayRead, loaded->file->inode()).ok();
  image.dumpable = readable && !secure ? 1 : 0;
  image.secure = secure;
  image.creds = std::move(new_creds);
  image.entry = loaded->load.entry;
  image.stack_pointer = loaded->load.stack_pointer;
  TRY_VOID(t.Execve(std::move(image)));
  return uint64_t{0};
}

// execve(2).
SyscallResult Execve(Task& t, UserCString path, UserAddr argv, UserAddr envp) {
  return DoExecveat(t, AT_FDCWD, path, argv, envp, 0);
}

// execveat(2).
SyscallResult Execveat(Task& t, int32_t dirfd, UserCString path, UserAddr argv,
                       UserAddr envp, int32_t flags) {
  return DoExecveat(t, dirfd, path, argv, envp, flags);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Execve);
SANDBOX_SYSCALL_HANDLER(Execveat);

}  // namespace sandbox::syscalls
