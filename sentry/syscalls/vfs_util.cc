#include "sentry/syscalls/vfs_util.h"

#include <fcntl.h>
#include <sys/resource.h>

#include "sentry/abi/linux.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/guest_io.h"
#include "sentry/vfs/at_start.h"

namespace sandbox::syscalls {

KResult<std::string> CopyInPath(Task& t, UserCString path) {
  // getname: ENAMETOOLONG when no NUL is within PATH_MAX bytes.
  return path.CopyIn(t, abi::kPathMax);
}

KResult<std::string_view> CopyInPath(Task& t, UserCString path, PathBuf& buf) {
  TRY(size_t n,
      mm::CopyInCString(t.mm(), path.addr, buf.data, sizeof(buf.data)));
  return std::string_view(buf.data, n);
}

KResult<vfs::ResolveBase> BaseAt(Task& t, int32_t dirfd, std::string_view path,
                                 const kernel::Credentials& creds,
                                 bool empty_ok) {
  if (path.empty() && !empty_ok) return kENOENT;
  if (dirfd == AT_FDCWD && !path.empty() && path[0] != '/') {
    // Root and cwd under one FsContext lock (vfs::AtStart's AT_FDCWD case).
    vfs::VirtualDentry root, cwd;
    t.fs().RootAndCwd(&root, &cwd);
    if (!root.ok()) return kENOENT;
    return vfs::ResolveBase{creds, std::move(root), std::move(cwd)};
  }
  vfs::VirtualDentry root = t.fs().Root();
  if (!root.ok()) return kENOENT;
  if (!path.empty() && path[0] == '/') {
    // vfs::AtStart would take the FsContext lock again for the same root.
    vfs::VirtualDentry start = root;
    return vfs::ResolveBase{creds, std::move(root), std::move(start)};
  }
  TRY(vfs::VirtualDentry start,
      vfs::AtStart(t.fd_table(), t.fs(), dirfd, path));
  return vfs::ResolveBase{creds, std::move(root), std::move(start)};
}

KResult<vfs::FileRef> GetFileRaw(Task& t, int32_t fd) {
  return t.fd_table().Get(fd, nullptr);
}

KResult<vfs::FileRef> GetFile(Task& t, int32_t fd) {
  TRY(vfs::FileRef f, t.fd_table().Get(fd, nullptr));
  if (f->status_flags() & O_PATH) return kEBADF;
  return f;
}

vfs::VfsFile* AsVfsFile(const vfs::FileRef& f) {
  return dynamic_cast<vfs::VfsFile*>(f.get());
}

uint64_t NofileLimit(Task& t) {
  return t.thread_group().GetLimit(RLIMIT_NOFILE).rlim_cur;
}

}  // namespace sandbox::syscalls
