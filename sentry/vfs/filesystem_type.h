// FilesystemType and FilesystemTypeRegistry: the file system types the
// Sentry knows (Linux's struct file_system_type and register_filesystem;
// gVisor's vfs.FilesystemType and RegisterFilesystemType).
//
// Each type parses its own mount(2) options and makes its instances; the
// syscall layer looks a type up by name and knows none of them. The
// registry is the kernel's (kernel::Kernel::filesystem_types()); boot
// registers every type once, in Linux's registration order, before any
// guest code runs (sentry/boot/root_fs.h: RegisterFilesystemTypes).
// /proc/filesystems lists the registry.
//
// Thread-safety: the registry is safe to use from any thread; types are
// never removed, so a looked-up type lives as long as the registry.
// Lock order: FilesystemTypeRegistry::mu_ is a leaf (types' methods run
// outside it).
#ifndef SENTRY_VFS_FILESYSTEM_TYPE_H_
#define SENTRY_VFS_FILESYSTEM_TYPE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/vfs/filesystem.h"

namespace sandbox::platform {
class MemoryFile;
}  // namespace sandbox::platform

namespace sandbox::vfs {

// What a type may need from mount(2)'s caller to make an instance.
struct MountContext {
  // The caller's memory file: a tmpfs keeps its data there, and its limit
  // (--memory) is the "RAM" that tmpfs's default size is half of.
  platform::MemoryFile& memory_file;
};

// An instance made for mount(2) (Linux's fs_context after get_tree).
struct NewFilesystem {
  std::shared_ptr<Filesystem> fs;
  // The super block's options as mountinfo shows them ("size=1024k,
  // mode=755"; empty: none).
  std::string shown_options;
  // "ro" was among the options (the mount is made read-only).
  bool read_only = false;
};

class FilesystemType {
 public:
  virtual ~FilesystemType() = default;

  // The name mount(2) and /proc/filesystems use ("tmpfs").
  virtual std::string_view name() const = 0;
  // Whether mount(2) may make new instances. The others (pipefs, 9p,
  // overlay, devtmpfs: made by the Sentry itself) are only listed, and
  // mount(2) of them is ENODEV as for an unknown type.
  virtual bool user_mountable() const { return true; }
  // FS_REQUIRES_DEV: the type mounts a block device (/proc/filesystems
  // shows no "nodev" before it). None does yet.
  virtual bool requires_device() const { return false; }

  // mount(2) of a new instance: parses `data` (the options, already cut at
  // the first NUL) and makes the file system. EINVAL for a bad option, as
  // the type's parse_param gives. Only called if user_mountable(); the
  // default is ENODEV.
  virtual KResult<NewFilesystem> GetFilesystem(const MountContext& ctx,
                                               std::string_view source,
                                               std::string_view data) const;
  // MS_REMOUNT of instance `fs` of this type (reconfigure_super): the
  // options are checked as for a new instance, and applied where the type
  // can (devpts's ptmxmode). Returns whether they say "ro". The default
  // accepts the generic options only (ParseGenericOptions).
  virtual KResult<bool> Reconfigure(const MountContext& ctx, Filesystem& fs,
                                    std::string_view data) const;
};

// A type mount(2) cannot make: listed in /proc/filesystems only.
class ListedFilesystemType final : public FilesystemType {
 public:
  explicit ListedFilesystemType(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  bool user_mountable() const override { return false; }

 private:
  const std::string name_;
};

// A type with no options of its own (proc, sysfs): mount(2) accepts the
// generic flags only (ParseGenericOptions) and `make` gives the instance.
class GenericOptionsType final : public FilesystemType {
 public:
  using Maker = std::function<std::shared_ptr<Filesystem>()>;
  GenericOptionsType(std::string name, Maker make)
      : name_(std::move(name)), make_(std::move(make)) {}
  std::string_view name() const override { return name_; }
  KResult<NewFilesystem> GetFilesystem(const MountContext& ctx,
                                       std::string_view source,
                                       std::string_view data) const override;

 private:
  const std::string name_;
  const Maker make_;
};

class FilesystemTypeRegistry {
 public:
  FilesystemTypeRegistry() = default;
  FilesystemTypeRegistry(const FilesystemTypeRegistry&) = delete;
  FilesystemTypeRegistry& operator=(const FilesystemTypeRegistry&) = delete;

  // Adds `type` after the ones registered before. EBUSY if a type of that
  // name is registered already (register_filesystem), and `type` is dropped.
  KResult<void> Register(std::unique_ptr<FilesystemType> type)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The type named `name`, or null (mount(2): ENODEV).
  const FilesystemType* Lookup(std::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // /proc/filesystems: "nodev\tNAME\n" (or "\tNAME\n" for a type that
  // requires a device) for each type, in registration order.
  std::string FilesystemsText() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<FilesystemType>> types_ ABSL_GUARDED_BY(mu_);
};

// ---- Option parsing shared by the types. ----

// vfs_parse_sb_flag: whether `key` is one of the generic super block flags
// a data string may carry (ro, rw, sync, dirsync, lazytime, mand, ...),
// matched by key alone; "ro" and "rw" set *read_only.
bool ParseSbFlag(std::string_view key, bool* read_only);

// The options of a type with none of its own (proc, sysfs): the generic
// flags only, comma-separated; EINVAL for anything else. Returns whether
// they say "ro".
KResult<bool> ParseGenericOptions(std::string_view data);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_FILESYSTEM_TYPE_H_
