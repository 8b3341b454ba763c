// memfd_create(2): an anonymous tmpfs file on the kernel's internal shm
// mount (Kernel::ShmRoot, Linux's shm_mnt), which no mount namespace
// contains, so no path reaches it. Seals: fcntl F_ADD_SEALS/F_GET_SEALS
// (file.cc) call tmpfs::RegularFile::AddSeals/seals().
#include <fcntl.h>
#include <linux/memfd.h>
#include <sys/stat.h>

#include <memory>
#include <string>
#include <utility>

#include "sentry/abi/syscalls.h"
#include "sentry/fs/tmpfs/regular_file.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/handler.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/mount.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26
#define MFD_HUGE_MASK 0x3f
#endif

namespace sandbox::syscalls {
namespace {

constexpr uint32_t kAllFlags =
    MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | MFD_NOEXEC_SEAL | MFD_EXEC;
constexpr char kNamePrefix[] = "memfd:";
// NAME_MAX minus the prefix: 249 bytes.
constexpr size_t kNameMax = 255 - (sizeof(kNamePrefix) - 1);

// F_SEAL_SEAL, F_SEAL_EXEC (linux/fcntl.h; F_SEAL_EXEC is Linux 6.3+).
constexpr uint32_t kSealSeal = 0x0001;
constexpr uint32_t kSealExec = 0x0020;

// memfd_create(2).
SyscallResult MemfdCreate(Task& t, UserAddr uname, uint32_t flags) {
  // sanitize_flags(): huge page size bits only with MFD_HUGETLB.
  uint32_t allowed = kAllFlags;
  if (flags & MFD_HUGETLB) allowed |= MFD_HUGE_MASK << MFD_HUGE_SHIFT;
  if (flags & ~allowed) return kEINVAL;
  if ((flags & MFD_EXEC) && (flags & MFD_NOEXEC_SEAL)) return kEINVAL;
  // vm.memfd_noexec = 0 (the default): neither flag means MFD_EXEC.
  // alloc_name(): strncpy_from_user of at most kNameMax + 1 bytes.
  KResult<std::string> name = t.CopyInString(uname.addr, kNameMax + 1);
  if (!name.ok()) {
    return name.error() == kENAMETOOLONG ? kEINVAL : kEFAULT;
  }
  // No hugetlbfs: as a kernel without CONFIG_HUGETLBFS.
  if (flags & MFD_HUGETLB) return kEINVAL;

  vfs::VirtualDentry root = t.kernel().ShmRoot([&t] {
    // shm_mnt: no size or inode limit (statfs shows no sizes).
    auto fs = fs::tmpfs::Filesystem::Create(
        t.mm().memory_file(),
        fs::tmpfs::Options{.max_bytes = 0, .max_inodes = 0});
    return vfs::Mount::Create(fs, fs->root(), 0);
  });
  auto& fs = static_cast<fs::tmpfs::Filesystem&>(root.mount->fs());
  // shmem_file_setup(): a regular file, mode 0777 (no umask), owned by the
  // caller's fsuid/fsgid, with no links.
  vfs::NewInodeAttrs attrs;
  attrs.mode = S_IFREG | 0777;
  if (flags & MFD_NOEXEC_SEAL) attrs.mode &= ~0111u;
  attrs.uid = t.creds().fsuid;
  attrs.gid = t.creds().fsgid;
  TRY(std::shared_ptr<vfs::Inode> inode, fs.NewInode(attrs, {}));
  inode->DecLinks();
  auto file = std::static_pointer_cast<fs::tmpfs::RegularFile>(inode);
  uint32_t seals = kSealSeal;
  if (flags & MFD_NOEXEC_SEAL) {
    seals = kSealExec;
  } else if (flags & MFD_ALLOW_SEALING) {
    seals = 0;
  }
  file->InitMemfd(kNamePrefix + *name, seals);

  vfs::VirtualDentry vd{
      root.mount, vfs::Dentry::NewAnonymous(root.dentry, std::move(inode))};
  // O_LARGEFILE as the kernel spells it on x86-64 (F_GETFL shows it).
  constexpr uint32_t kOLargefile = 0100000;
  TRY(std::shared_ptr<vfs::VfsFile> f, file->Open(vd, O_RDWR | kOLargefile));
  const uint64_t nofile = t.thread_group().GetLimit(RLIMIT_NOFILE).rlim_cur;
  TRY(int fd,
      t.fd_table().Install(std::move(f), 0, flags & MFD_CLOEXEC, nofile));
  return static_cast<uint64_t>(fd);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(MemfdCreate);

}  // namespace sandbox::syscalls
