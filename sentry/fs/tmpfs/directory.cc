#include "sentry/fs/tmpfs/directory.h"

#include <linux/fs.h>
#include <sys/stat.h>

namespace sandbox::fs::tmpfs {

Directory::Directory(Filesystem& fs, uint64_t ino,
                     const vfs::NewInodeAttrs& attrs)
    : TmpfsInode(fs, ino, attrs) {
  IncLinks();  // "." (the entry in the parent is the first link)
}

bool Directory::IsEmptyDir() {
  fs_.tree_mu().AssertReaderHeld();
  return entries_.empty();
}

void Directory::Insert(std::string_view name,
                       std::shared_ptr<vfs::Inode> inode) {
  int64_t cookie = next_cookie_++;
  entries_.emplace(cookie, Entry{std::string(name), std::move(inode)});
  by_name_.emplace(std::string(name), cookie);
  num_entries_.store(entries_.size(), std::memory_order_relaxed);
}

std::shared_ptr<vfs::Inode> Directory::Erase(std::string_view name) {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return nullptr;
  auto e = entries_.find(it->second);
  std::shared_ptr<vfs::Inode> inode = std::move(e->second.inode);
  entries_.erase(e);
  by_name_.erase(it);
  num_entries_.store(entries_.size(), std::memory_order_relaxed);
  return inode;
}

abi::Stat Directory::Stat() const {
  constexpr int64_t kBogoDirentSize = 20;
  abi::Stat st = vfs::Inode::Stat();
  st.st_size =
      kBogoDirentSize *
      static_cast<int64_t>(num_entries_.load(std::memory_order_relaxed) + 2);
  st.st_blocks = 0;
  return st;
}

void Directory::MarkRemoved() {
  removed_ = true;
  DecLinks();  // "."
  DecLinks();  // the entry in the parent
}

KResult<std::shared_ptr<vfs::Inode>> Directory::Lookup(std::string_view name) {
  fs_.tree_mu().AssertReaderHeld();
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return kENOENT;
  return entries_.at(it->second).inode;
}

KResult<std::shared_ptr<vfs::Inode>> Directory::CreateChild(
    std::string_view name, const vfs::NewInodeAttrs& attrs,
    std::string_view symlink_target) {
  fs_.tree_mu().AssertHeld();
  if (removed_) return kENOENT;
  if (by_name_.contains(std::string(name))) return kEEXIST;
  TRY(std::shared_ptr<vfs::Inode> inode,
      tmpfs().NewInode(attrs, symlink_target));
  if (inode->IsDir()) IncLinks();  // the child's ".."
  Insert(name, inode);
  TouchCMTime();
  return inode;
}

KResult<std::shared_ptr<vfs::Inode>> Directory::CreateTmpfile(
    const vfs::NewInodeAttrs& attrs) {
  if ((attrs.mode & S_IFMT) != S_IFREG) return kEINVAL;
  TRY(std::shared_ptr<vfs::Inode> inode, tmpfs().NewInode(attrs, {}));
  inode->DecLinks();  // no name yet
  return inode;
}

KResult<void> Directory::LinkChild(std::string_view name,
                                   const std::shared_ptr<vfs::Inode>& target) {
  fs_.tree_mu().AssertHeld();
  if (removed_) return kENOENT;
  if (by_name_.contains(std::string(name))) return kEEXIST;
  target->IncLinks();
  Insert(name, target);
  TouchCMTime();
  return OkResult();
}

KResult<void> Directory::RemoveChild(std::string_view name, vfs::Inode& child) {
  fs_.tree_mu().AssertHeld();
  std::shared_ptr<vfs::Inode> inode = Erase(name);
  if (inode == nullptr) return kENOENT;
  if (inode->IsDir()) {
    auto& dir = static_cast<Directory&>(*inode);
    dir.fs_.tree_mu().AssertHeld();
    dir.MarkRemoved();
    DecLinks();  // its ".."
  } else {
    inode->DecLinks();
  }
  TouchCMTime();
  return OkResult();
}

KResult<void> Directory::RenameChild(std::string_view old_name,
                                     vfs::Inode& new_dir_inode,
                                     std::string_view new_name,
                                     uint32_t flags) {
  auto& new_dir = static_cast<Directory&>(new_dir_inode);
  fs_.tree_mu().AssertHeld();
  new_dir.fs_.tree_mu().AssertHeld();  // the same file system
  auto oit = by_name_.find(std::string(old_name));
  if (oit == by_name_.end()) return kENOENT;
  auto nit = new_dir.by_name_.find(std::string(new_name));
  if (flags & RENAME_EXCHANGE) {
    if (nit == new_dir.by_name_.end()) return kENOENT;
    Entry& a = entries_.at(oit->second);
    Entry& b = new_dir.entries_.at(nit->second);
    std::swap(a.inode, b.inode);
    if (this != &new_dir && a.inode->IsDir() != b.inode->IsDir()) {
      // One directory changed parents each way: move one ".." link.
      if (b.inode->IsDir()) {  // the directory moved from here to new_dir
        DecLinks();
        new_dir.IncLinks();
      } else {
        new_dir.DecLinks();
        IncLinks();
      }
    }
    a.inode->TouchCTime();
    b.inode->TouchCTime();
  } else {
    if (nit != new_dir.by_name_.end()) {
      std::shared_ptr<vfs::Inode> replaced = new_dir.Erase(new_name);
      if (replaced->IsDir()) {
        auto& dir = static_cast<Directory&>(*replaced);
        dir.fs_.tree_mu().AssertHeld();
        dir.MarkRemoved();
        new_dir.DecLinks();
      } else {
        replaced->DecLinks();
      }
    }
    std::shared_ptr<vfs::Inode> moved = Erase(old_name);
    if (moved->IsDir() && this != &new_dir) {
      DecLinks();
      new_dir.IncLinks();
    }
    moved->TouchCTime();
    new_dir.Insert(new_name, std::move(moved));
  }
  TouchCMTime();
  if (this != &new_dir) new_dir.TouchCMTime();
  return OkResult();
}

KResult<void> Directory::IterDirents(int64_t offset, vfs::DirentSink sink) {
  fs_.tree_mu().AssertReaderHeld();
  for (auto it = entries_.lower_bound(offset); it != entries_.end(); ++it) {
    const Entry& e = it->second;
    vfs::DirEntry de{e.name, e.inode->ino(), vfs::DirentType(e.inode->type()),
                     it->first + 1};
    if (!sink(de)) break;
  }
  return OkResult();
}

}  // namespace sandbox::fs::tmpfs
