// kernfs: building blocks for synthetic file systems whose content the
// Sentry generates (/proc, /sys, /dev), like gVisor's kernfs and Linux's
// proc_fs/seq_file helpers.
//
//  - Filesystem: a vfs::Filesystem with a type name, a statfs magic and an
//    inode-number counter; the user builds the tree and calls SetRoot once.
//  - Dir: a directory with a fixed list of children (Add, before the file
//    system is mounted) and optionally dynamic ones named by numbers (a
//    number lister and a lookup function: one entry per PID, TID or
//    descriptor). Name changes fail with EPERM as Linux gives for a
//    directory without those inode operations.
//  - Symlink: a link whose target is computed on each readlink/follow
//    (/proc/self -> "<pid>"); with a Jump it is a magic link
//    (/proc/PID/fd/N, cwd, root, exe): walks jump to the location the Jump
//    returns, readlink gives the text.
//  - GeneratedFile: a read-only regular file whose bytes are produced by a
//    function, like seq_file: on the first read and again on every read at
//    offset 0, so `cat` sees the state of the moment. st_size is 0.
//
// Locking: a Dir's static children are immutable once it is reachable (Add
// is only called while building); dynamic children come from the callbacks,
// which do their own locking. GeneratedFile data is per open description,
// under the VfsFile's offset_mu_. Callbacks run with the file system's
// tree_mu held shared (lookups, listings): they must not walk paths of this
// file system.
#ifndef SENTRY_FS_KERNFS_KERNFS_H_
#define SENTRY_FS_KERNFS_KERNFS_H_

#include <stdint.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "sentry/base/result.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::kernfs {

class Filesystem : public vfs::Filesystem {
 public:
  // How a name that is absent from one of its directories behaves when a
  // file is created there (open O_CREAT, mknod, mkdir, symlink, link).
  enum class Absent {
    // Lookup gives a negative dentry and the directory has no create
    // operations (sysfs, devpts): vfs_create's EACCES for a regular file,
    // vfs_mkdir/mknod/symlink/link's EPERM for the rest.
    kNoCreateOps,
    // Lookup itself fails with ENOENT (proc_lookup, proc_sys_lookup), so
    // every creation does.
    kLookupFails,
  };

  Filesystem(std::string type_name, uint64_t magic,
             Absent absent = Absent::kNoCreateOps)
      : type_name_(std::move(type_name)), magic_(magic), absent_(absent) {}

  std::string_view type_name() const override { return type_name_; }
  std::shared_ptr<vfs::Dentry> root() const override { return root_; }
  vfs::FsStats StatFs() override;

  uint64_t NextIno() {
    return next_ino_.fetch_add(1, std::memory_order_relaxed);
  }
  // Called once, before the file system is mounted.
  void SetRoot(std::shared_ptr<vfs::Inode> root);
  Absent absent() const { return absent_; }

 private:
  const std::string type_name_;
  const uint64_t magic_;
  const Absent absent_;
  std::atomic<uint64_t> next_ino_{1};
  std::shared_ptr<vfs::Dentry> root_;
};

// Attributes of a synthetic inode owned by root.
vfs::NewInodeAttrs RootOwned(uint32_t mode, uint64_t rdev = 0);

class Dir : public vfs::Inode {
 public:
  // The numbers that name the dynamic children now (any order). A child's
  // directory offset is 2 + fixed children + its number, as Linux's
  // proc_pid_readdir and proc_readfd_common use the PID or descriptor: a
  // listing resumes after the last number it returned, so children that go
  // away meanwhile never make it skip others.
  using NumberLister = std::function<std::vector<uint64_t>()>;
  using DynamicLookup =
      std::function<KResult<std::shared_ptr<vfs::Inode>>(std::string_view)>;

  // `perm`: permission bits (0555 for /proc directories).
  Dir(Filesystem& fs, uint32_t perm, uint32_t uid = 0, uint32_t gid = 0);

  // Adds a fixed child. Only while building (before mounting).
  void Add(std::string name, std::shared_ptr<vfs::Inode> inode);
  // Adds dynamic children (listed after the fixed ones, in increasing
  // number, each named by its number in decimal). Only while building.
  void SetDynamic(NumberLister numbers, DynamicLookup lookup);

  KResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override;
  KResult<void> IterDirents(int64_t offset, vfs::DirentSink sink) override;
  bool IsEmptyDir() override { return false; }
  // Nothing can be created: see Filesystem::Absent.
  KResult<std::shared_ptr<vfs::Inode>> CreateChild(
      std::string_view, const vfs::NewInodeAttrs& attrs,
      std::string_view) override;
  KResult<void> LinkChild(std::string_view,
                          const std::shared_ptr<vfs::Inode>&) override;
  KResult<void> RemoveChild(std::string_view, vfs::Inode&) override {
    return kEPERM;
  }
  KResult<void> RenameChild(std::string_view, vfs::Inode&, std::string_view,
                            uint32_t) override {
    return kEPERM;
  }

  Filesystem& kfs() const { return static_cast<Filesystem&>(fs()); }

 private:
  std::vector<std::pair<std::string, std::shared_ptr<vfs::Inode>>> fixed_;
  NumberLister numbers_;
  DynamicLookup lookup_;
};

class Symlink final : public vfs::Inode {
 public:
  using Target = std::function<KResult<std::string>()>;
  // `perm`: 0777 except for /proc/pid/fd links (their file's access).
  Symlink(Filesystem& fs, Target target, uint32_t uid = 0, uint32_t gid = 0,
          uint32_t perm = 0777);
  // A fixed target.
  Symlink(Filesystem& fs, std::string target);
  KResult<std::string> Readlink() override { return target_(); }

  // Makes this a magic link. Only while building (before the inode is
  // reachable).
  using Jump = std::function<KResult<vfs::VirtualDentry>()>;
  void SetJump(Jump jump) { jump_ = std::move(jump); }
  bool IsMagicLink() const override { return jump_ != nullptr; }
  KResult<vfs::VirtualDentry> MagicLink() override {
    if (!jump_) return kENOENT;
    return jump_();
  }

 private:
  const Target target_;
  Jump jump_;
};

class GeneratedFile final : public vfs::Inode {
 public:
  using Generator = std::function<KResult<std::string>()>;
  // Handles one write(2) of these bytes; returns the count consumed.
  using Writer = std::function<KResult<size_t>(std::string_view)>;
  GeneratedFile(Filesystem& fs, uint32_t perm, Generator gen, uint32_t uid = 0,
                uint32_t gid = 0);
  // Makes writes go to `writer` (else they fail with EINVAL). Only while
  // building.
  void SetWriter(Writer writer) { writer_ = std::move(writer); }
  // Fixed content.
  GeneratedFile(Filesystem& fs, uint32_t perm, std::string content);

  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override;
  // The content now (tests, and callers that want it without a file).
  KResult<std::string> Generate() const { return gen_(); }

 protected:
  // truncate(2) and O_TRUNC succeed and change nothing, as proc_setattr,
  // proc_sys_setattr and kernfs_iop_setattr accept ATTR_SIZE: the content
  // is generated (so `echo 1 > /proc/sys/...` works as on Linux).
  KResult<void> Truncate(uint64_t) override { return OkResult(); }

 private:
  const Generator gen_;
  Writer writer_;
};

// An open GeneratedFile (seq_file): lseek with SEEK_SET/SEEK_CUR only,
// pread, read; writes fail with EINVAL (no write operation).
class GeneratedFileDescription final : public vfs::VfsFile {
 public:
  GeneratedFileDescription(vfs::VirtualDentry vd, uint32_t flags,
                           GeneratedFile::Generator gen,
                           GeneratedFile::Writer writer = nullptr)
      : VfsFile(std::move(vd), flags),
        gen_(std::move(gen)),
        writer_(std::move(writer)) {}

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<size_t> PRead(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                        int64_t offset) override;
  // To the file's writer, at any offset (like Linux's simple proc writes);
  // EINVAL without one.
  KResult<size_t> Write(vfs::IoContext&,
                        absl::Span<const uint8_t> src) override {
    return WriteAll(src);
  }
  KResult<size_t> PWrite(vfs::IoContext&, absl::Span<const uint8_t> src,
                         int64_t) override {
    return WriteAll(src);
  }
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  // proc_reg_poll / kernfs_fop_poll: pollable, always DEFAULT_POLLMASK.
  bool CanPoll() const override { return true; }

 private:
  // Copies from data_ at `offset`, generating it first if needed.
  KResult<size_t> ReadAtLocked(absl::Span<uint8_t> dst, int64_t offset)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(offset_mu_);

  KResult<size_t> WriteAll(absl::Span<const uint8_t> src) {
    if (!writer_) return kEINVAL;
    return writer_(std::string_view(reinterpret_cast<const char*>(src.data()),
                                    src.size()));
  }

  const GeneratedFile::Generator gen_;
  const GeneratedFile::Writer writer_;
  bool generated_ ABSL_GUARDED_BY(offset_mu_) = false;
  std::string data_ ABSL_GUARDED_BY(offset_mu_);
};

}  // namespace sandbox::fs::kernfs

#endif  // SENTRY_FS_KERNFS_KERNFS_H_
