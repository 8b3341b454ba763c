// Executing a file from the VFS: what execve(2) does between opening the
// file and replacing the process image. "#!" scripts are followed (their
// interpreter opened with execve's checks, at most kMaxInterpreterDepth
// levels), and the final ELF file is loaded with its PT_INTERP opened the
// same way (Linux's open_exec), into a fresh MemoryManager.
//
// Used by execve/execveat (sentry/syscalls/exec.cc) and `runsc boot`'s
// first process.
#ifndef SENTRY_LOADER_EXEC_H_
#define SENTRY_LOADER_EXEC_H_

#include <memory>
#include <string>

#include "sentry/base/result.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/path_walk.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::loader {

// Linux's exe_file_deny_write_access: while the returned hold lives,
// opening the file for writing and truncating it by path fail with ETXTBSY
// (vfs::Inode::DenyWriteAccess). ETXTBSY if the file is open for writing
// now. The hold keeps the open file (and so its dentry and inode) alive, as
// Linux's mm->exe_file does.
using WriteDenial = std::shared_ptr<const void>;
KResult<WriteDenial> DenyWrite(std::shared_ptr<vfs::VfsFile> file);

struct ExecRequest {
  // Credentials, root and cwd for the interpreters' walks (the exec'ing
  // task's).
  vfs::ResolveBase base;
  // The executable, opened by OpenExecutable (or execveat's descriptor,
  // checked the same way).
  std::shared_ptr<vfs::VfsFile> file;
  // Linux's bprm->filename: the path given to execve, or "/dev/fd/N[/path]"
  // for execveat relative to a descriptor. AT_EXECFN's string and the path
  // a script's interpreter gets.
  std::string filename;
  // execveat of a close-on-exec descriptor: the path will not exist after
  // the exec, so a script (whose interpreter would open it) fails with
  // ENOENT (Linux's BINPRM_FLAGS_PATH_INACCESSIBLE).
  bool path_inaccessible = false;
  // argv, envp, ids, hwcap, minsigstksz (exec_path and open_interpreter are
  // set here).
  LoadArgs args;
  // DenyWrite(file), taken when the file was opened (execve does, as
  // do_open_execat; ETXTBSY comes before the argument checks); if null,
  // LoadExecutable takes it.
  WriteDenial file_denial;
};

struct ExecResult {
  LoadResult load;
  // The file finally loaded (a script's interpreter): /proc/self/exe.
  std::shared_ptr<vfs::VfsFile> file;
  // Its path from the root (or the name it was opened by, if unreachable).
  std::string exe_path;
};

// Loads req.file (following "#!" lines) into `mm`, which must be fresh.
// Writing is denied (DenyWrite, ETXTBSY) for each file while the exec uses
// it: a script's until its interpreter is open, a PT_INTERP interpreter's
// until it is loaded; the final file's hold goes to the new mm
// (ProcessImage::exe_denial: Linux's mm->exe_file), which keeps it for
// the life of the image and shares it with the mms fork makes.
// Errors: those of Load (loader.h), the interpreters' open errors (ENOENT,
// EACCES, ...), ENOEXEC for a file that is neither ELF nor a valid script,
// ELOOP past kMaxInterpreterDepth scripts. *committed as for Load: true
// when the failure is past Linux's point of no return (kill the process).
KResult<ExecResult> LoadExecutable(mm::MemoryManager& mm, ExecRequest req,
                                   std::string* why, bool* committed);

}  // namespace sandbox::loader

#endif  // SENTRY_LOADER_EXEC_H_
