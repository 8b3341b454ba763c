#include "sentry/fs/kernfs/kernfs.h"

#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"

namespace sandbox::fs::kernfs {

vfs::FsStats Filesystem::StatFs() {
  vfs::FsStats st;
  st.type = magic_;
  st.name_max = vfs::kNameMax;
  return st;
}

void Filesystem::SetRoot(std::shared_ptr<vfs::Inode> root) {
  root_ = vfs::Dentry::NewRoot(std::move(root));
}

vfs::NewInodeAttrs RootOwned(uint32_t mode, uint64_t rdev) {
  vfs::NewInodeAttrs a;
  a.mode = mode;
  a.rdev = rdev;
  return a;
}

// ---- Dir ----

Dir::Dir(Filesystem& fs, uint32_t perm, uint32_t uid, uint32_t gid)
    : vfs::Inode(fs, fs.NextIno(),
                 vfs::NewInodeAttrs{S_IFDIR | (perm & 07777), uid, gid, 0}) {
  IncLinks();  // "."
}

void Dir::Add(std::string name, std::shared_ptr<vfs::Inode> inode) {
  if (inode->IsDir()) IncLinks();  // its ".."
  fixed_.emplace_back(std::move(name), std::move(inode));
}

void Dir::SetDynamic(NumberLister numbers, DynamicLookup lookup) {
  numbers_ = std::move(numbers);
  lookup_ = std::move(lookup);
}

KResult<std::shared_ptr<vfs::Inode>> Dir::Lookup(std::string_view name) {
  for (const auto& [n, inode] : fixed_) {
    if (n == name) return inode;
  }
  if (lookup_) return lookup_(name);
  return kENOENT;
}

KResult<void> Dir::IterDirents(int64_t offset, vfs::DirentSink sink) {
  // Cookies: fixed child i is 2 + i; dynamic child number n is
  // 2 + fixed_.size() + n. Each entry's next offset is its cookie + 1.
  int64_t cookie = 2;
  for (const auto& [name, inode] : fixed_) {
    if (cookie >= offset) {
      vfs::DirEntry e{name, inode->ino(), vfs::DirentType(inode->type()),
                      cookie + 1};
      if (!sink(e)) return OkResult();
    }
    ++cookie;
  }
  if (!numbers_) return OkResult();
  const uint64_t base = static_cast<uint64_t>(cookie);
  // Numbers whose cookie would not fit an offset are never listed.
  const uint64_t max_number = static_cast<uint64_t>(INT64_MAX) - 1 - base;
  const uint64_t first =
      offset > cookie ? static_cast<uint64_t>(offset) - base : 0;
  std::vector<uint64_t> numbers = numbers_();
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  for (auto it = std::lower_bound(numbers.begin(), numbers.end(), first);
       it != numbers.end() && *it <= max_number; ++it) {
    std::string name = absl::StrCat(*it);
    KResult<std::shared_ptr<vfs::Inode>> inode = lookup_(name);
    if (!inode.ok()) continue;  // gone meanwhile
    vfs::DirEntry e{name, (*inode)->ino(), vfs::DirentType((*inode)->type()),
                    static_cast<int64_t>(base + *it + 1)};
    if (!sink(e)) return OkResult();
  }
  return OkResult();
}

// ---- Symlink ----

Symlink::Symlink(Filesystem& fs, Target target, uint32_t uid, uint32_t gid,
                 uint32_t perm)
    : vfs::Inode(fs, fs.NextIno(),
                 vfs::NewInodeAttrs{S_IFLNK | (perm & 0777), uid, gid, 0}),
      target_(std::move(target)) {}

Symlink::Symlink(Filesystem& fs, std::string target)
    : Symlink(fs,
              [t = std::move(target)]() -> KResult<std::string> { return t; }) {
}

// ---- GeneratedFile ----

KResult<std::shared_ptr<vfs::Inode>> Dir::CreateChild(
    std::string_view, const vfs::NewInodeAttrs& attrs, std::string_view) {
  if (kfs().absent() == Filesystem::Absent::kLookupFails) return kENOENT;
  return S_ISREG(attrs.mode) ? kEACCES : kEPERM;
}

KResult<void> Dir::LinkChild(std::string_view,
                             const std::shared_ptr<vfs::Inode>&) {
  if (kfs().absent() == Filesystem::Absent::kLookupFails) return kENOENT;
  return kEPERM;
}

GeneratedFile::GeneratedFile(Filesystem& fs, uint32_t perm, Generator gen,
                             uint32_t uid, uint32_t gid)
    : vfs::Inode(fs, fs.NextIno(),
                 vfs::NewInodeAttrs{S_IFREG | (perm & 07777), uid, gid, 0}),
      gen_(std::move(gen)) {}

GeneratedFile::GeneratedFile(Filesystem& fs, uint32_t perm, std::string content)
    : GeneratedFile(
          fs, perm,
          [c = std::move(content)]() -> KResult<std::string> { return c; }) {}

KResult<std::shared_ptr<vfs::VfsFile>> GeneratedFile::Open(
    const vfs::VirtualDentry& vd, uint32_t flags) {
  return std::shared_ptr<vfs::VfsFile>(
      std::make_shared<GeneratedFileDescription>(vd, flags, gen_, writer_));
}

KResult<size_t> GeneratedFileDescription::ReadAtLocked(absl::Span<uint8_t> dst,
                                                       int64_t offset) {
  if (offset < 0) return kEINVAL;
  if (!generated_ || offset == 0) {
    TRY(data_, gen_());
    generated_ = true;
  }
  if (static_cast<uint64_t>(offset) >= data_.size()) return size_t{0};
  size_t n = std::min(dst.size(), data_.size() - static_cast<size_t>(offset));
  memcpy(dst.data(), data_.data() + offset, n);
  return n;
}

KResult<size_t> GeneratedFileDescription::Read(vfs::IoContext&,
                                               absl::Span<uint8_t> dst) {
  absl::MutexLock l(&offset_mu_);
  TRY(size_t n, ReadAtLocked(dst, offset_));
  offset_ += static_cast<int64_t>(n);
  return n;
}

KResult<size_t> GeneratedFileDescription::PRead(vfs::IoContext&,
                                                absl::Span<uint8_t> dst,
                                                int64_t offset) {
  absl::MutexLock l(&offset_mu_);
  return ReadAtLocked(dst, offset);
}

KResult<int64_t> GeneratedFileDescription::Seek(int64_t offset, int whence) {
  absl::MutexLock l(&offset_mu_);
  // seq_lseek: SEEK_SET and SEEK_CUR only.
  if (whence != SEEK_SET && whence != SEEK_CUR) return kEINVAL;
  return SeekLocked(offset, whence, 0);
}

}  // namespace sandbox::fs::kernfs
