// Executables from the VFS: execve's open (do_open_execat) and a
// FileReader over the resulting file description.
#ifndef SENTRY_LOADER_VFS_READER_H_
#define SENTRY_LOADER_VFS_READER_H_

#include <stdint.h>

#include <memory>
#include <string_view>

#include "sentry/base/result.h"
#include "sentry/loader/file_reader.h"
#include "sentry/vfs/path_walk.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::loader {

// Opens `path` for execution as execve does: the walk's errors (ENOENT,
// ENOTDIR, ELOOP, EACCES, ENAMETOOLONG), then EACCES unless the final file
// is a regular file with execute permission for base.creds on a mount
// without MS_NOEXEC. Read permission is not needed (FMODE_EXEC). `opts`:
// execveat's AT_SYMLINK_NOFOLLOW (a final symlink is ELOOP) and
// AT_EMPTY_PATH (an empty path names base.start).
KResult<std::shared_ptr<vfs::VfsFile>> OpenExecutable(
    const vfs::ResolveBase& base, std::string_view path,
    const vfs::ResolveOptions& opts = {});

// Reads an open file with PRead (the description's offset is untouched).
class VfsFileReader : public FileReader {
 public:
  explicit VfsFileReader(std::shared_ptr<vfs::FileDescription> file)
      : file_(std::move(file)) {}
  KResult<size_t> ReadAt(uint64_t offset, void* buf, size_t n) override;
  KResult<uint64_t> Size() override;
  std::pair<uint64_t, uint64_t> Identity() override;
  std::shared_ptr<mm::Mappable> GetMappable() override;

 private:
  const std::shared_ptr<vfs::FileDescription> file_;
};

}  // namespace sandbox::loader

#endif  // SENTRY_LOADER_VFS_READER_H_
