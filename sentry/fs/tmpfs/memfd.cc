#include "sentry/fs/tmpfs/memfd.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <utility>

#include "sentry/abi/fcntl.h"
#include "sentry/fs/tmpfs/regular_file.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/vfs/dentry.h"

namespace sandbox::fs::tmpfs {

std::shared_ptr<vfs::Mount> NewShmMount(platform::MemoryFile& mf) {
  std::shared_ptr<Filesystem> fs =
      Filesystem::Create(mf, Options{.max_bytes = 0, .max_inodes = 0});
  return vfs::Mount::CreateInternal(fs, fs->root());
}

KResult<std::shared_ptr<vfs::VfsFile>> NewMemfd(const vfs::VirtualDentry& shm,
                                                const MemfdSpec& spec) {
  // The shm mount is a tmpfs (NewShmMount).
  auto& fs = static_cast<Filesystem&>(shm.mount->fs());
  // shmem_file_setup(): a regular file owned by the caller's fsuid/fsgid,
  // with no links.
  vfs::NewInodeAttrs attrs;
  attrs.mode = S_IFREG | (spec.mode & 07777);
  attrs.uid = spec.uid;
  attrs.gid = spec.gid;
  TRY(std::shared_ptr<vfs::Inode> inode, fs.NewInode(attrs, {}));
  inode->DecLinks();
  auto file = std::static_pointer_cast<RegularFile>(inode);
  file->InitMemfd(spec.seals);
  vfs::VirtualDentry vd{
      shm.mount,
      vfs::Dentry::NewAnonymous(shm.dentry, std::move(inode), spec.name)};
  // The kernel's O_LARGEFILE (F_GETFL shows it).
  return file->Open(vd, O_RDWR | abi::kOLargefile);
}

}  // namespace sandbox::fs::tmpfs
