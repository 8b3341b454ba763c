#include "sentry/fs/kernfs/kernfs.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/vfs/mount.h"

namespace sandbox::fs::kernfs {
namespace {

struct Tree {
  std::shared_ptr<Filesystem> fs;
  std::shared_ptr<Dir> root;
  std::shared_ptr<vfs::Mount> mount;
};

Tree MakeTree(GeneratedFile::Generator gen) {
  Tree t;
  t.fs = std::make_shared<Filesystem>("testfs", 0x1234);
  t.root = std::make_shared<Dir>(*t.fs, 0555);
  t.root->Add("file", std::make_shared<GeneratedFile>(*t.fs, 0444, gen));
  t.root->Add("sub", std::make_shared<Dir>(*t.fs, 0555));
  t.root->Add("link", std::make_shared<Symlink>(*t.fs, "file"));
  t.root->SetDynamic(
      [] {
        return std::vector<uint64_t>{9, 7};
      },
      [fs = t.fs.get()](
          std::string_view name) -> KResult<std::shared_ptr<vfs::Inode>> {
        if (name != "7" && name != "9") return kENOENT;
        return std::shared_ptr<vfs::Inode>(std::make_shared<Dir>(*fs, 0555));
      });
  t.fs->SetRoot(t.root);
  t.mount = vfs::Mount::Create(t.fs, t.fs->root(), 0);
  return t;
}

std::vector<std::string> List(Dir& d, int64_t offset) {
  std::vector<std::string> names;
  absl::ReaderMutexLock l(&d.fs().tree_mu());
  EXPECT_TRUE(d.IterDirents(offset, [&](const vfs::DirEntry& e) {
                 names.emplace_back(e.name);
                 return true;
               }).ok());
  return names;
}

TEST(KernfsTest, DirListsFixedThenDynamicAndResumes) {
  Tree t = MakeTree([]() -> KResult<std::string> { return std::string("x"); });
  EXPECT_EQ(List(*t.root, 2),
            (std::vector<std::string>{"file", "sub", "link", "7", "9"}));
  // Fixed entries are 2, 3, 4; dynamic number n is 5 + n.
  EXPECT_EQ(List(*t.root, 5), (std::vector<std::string>{"7", "9"}));
  EXPECT_EQ(List(*t.root, 13), (std::vector<std::string>{"9"}));
  EXPECT_EQ(List(*t.root, 15), (std::vector<std::string>{}));
  EXPECT_EQ(t.root->nlink(), 3u);  // ".", its own entry, sub's ".."
  absl::ReaderMutexLock l(&t.fs->tree_mu());
  EXPECT_TRUE(t.root->Lookup("9").ok());
  EXPECT_EQ(t.root->Lookup("8").error(), kENOENT);
  // No create operations (sysfs): vfs_create's EACCES, vfs_mkdir's EPERM.
  EXPECT_EQ(
      t.root->CreateChild("new", kernfs::RootOwned(S_IFREG | 0644), "").error(),
      kEACCES);
  EXPECT_EQ(
      t.root->CreateChild("new", kernfs::RootOwned(S_IFDIR | 0755), "").error(),
      kEPERM);
}

// A file system whose lookups fail for absent names (proc): every creation
// is ENOENT.
TEST(KernfsTest, CreatingWhereLookupFailsIsEnoent) {
  auto fs = std::make_shared<kernfs::Filesystem>(
      "proc", 0x9fa0, kernfs::Filesystem::Absent::kLookupFails);
  auto root = std::make_shared<kernfs::Dir>(*fs, 0555);
  fs->SetRoot(root);
  absl::ReaderMutexLock l(&fs->tree_mu());
  EXPECT_EQ(
      root->CreateChild("new", kernfs::RootOwned(S_IFREG | 0644), "").error(),
      kENOENT);
  EXPECT_EQ(
      root->CreateChild("new", kernfs::RootOwned(S_IFDIR | 0755), "").error(),
      kENOENT);
}

// Each dynamic entry's offset is its number: entries that go away after
// a partial listing do not make the rest of it skip any.
TEST(KernfsTest, DynamicOffsetsAreNumbersSoRemovalsSkipNothing) {
  auto fs = std::make_shared<Filesystem>("testfs", 0x1234);
  auto root = std::make_shared<Dir>(*fs, 0555);
  root->Add("fixed", std::make_shared<Dir>(*fs, 0555));
  std::vector<uint64_t> numbers = {3, 4, 5, 6, 40};
  root->SetDynamic([&numbers] { return numbers; },
                   [&numbers, fs = fs.get()](std::string_view name)
                       -> KResult<std::shared_ptr<vfs::Inode>> {
                     for (uint64_t n : numbers) {
                       if (std::to_string(n) == name) {
                         return std::shared_ptr<vfs::Inode>(
                             std::make_shared<Dir>(*fs, 0555));
                       }
                     }
                     return kENOENT;
                   });
  fs->SetRoot(root);
  // Two entries per call; the caller removes what it saw ("close each").
  std::vector<std::string> seen;
  int64_t offset = 2;
  for (int calls = 0; calls < 10; ++calls) {
    int took = 0;
    absl::ReaderMutexLock l(&fs->tree_mu());
    ASSERT_TRUE(root->IterDirents(offset,
                                  [&](const vfs::DirEntry& e) {
                                    if (took == 2) return false;
                                    ++took;
                                    seen.emplace_back(e.name);
                                    offset = e.next_offset;
                                    return true;
                                  })
                    .ok());
    if (took == 0) break;
    for (const std::string& name : seen) {
      numbers.erase(std::remove(numbers.begin(), numbers.end(),
                                std::strtoull(name.c_str(), nullptr, 10)),
                    numbers.end());
    }
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"fixed", "3", "4", "5", "6", "40"}));
  EXPECT_EQ(offset, 3 + 40 + 1);
}

TEST(KernfsTest, GeneratedFileRegeneratesAtOffsetZeroOnly) {
  int calls = 0;
  Tree t = MakeTree([&calls]() -> KResult<std::string> {
    ++calls;
    return std::string("gen") + std::to_string(calls) + "\n";
  });
  std::shared_ptr<vfs::Inode> inode;
  {
    absl::ReaderMutexLock l(&t.fs->tree_mu());
    inode = t.root->Lookup("file").value();
  }
  EXPECT_EQ(inode->Stat().st_size, 0);
  std::shared_ptr<vfs::Dentry> d = vfs::Dentry::NewRoot(inode);
  auto f = inode->Open({t.mount, d}, O_RDONLY).value();
  vfs::IoContext ctx;
  uint8_t buf[3];
  ASSERT_EQ(f->Read(ctx, absl::MakeSpan(buf, 3)).value(), 3u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 3), "gen");
  ASSERT_EQ(f->Read(ctx, absl::MakeSpan(buf, 3)).value(), 2u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 2), "1\n");
  EXPECT_EQ(f->Read(ctx, absl::MakeSpan(buf, 3)).value(), 0u);
  EXPECT_EQ(calls, 1);
  // Back to 0: the content is produced again.
  EXPECT_EQ(f->Seek(0, SEEK_SET).value(), 0);
  ASSERT_EQ(f->PRead(ctx, absl::MakeSpan(buf, 3), 3).value(), 2u);
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(f->Read(ctx, absl::MakeSpan(buf, 3)).value(), 3u);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(f->Seek(0, SEEK_END).error(), kEINVAL);
  const uint8_t w[1] = {'a'};
  EXPECT_EQ(f->Write(ctx, absl::MakeConstSpan(w, 1)).error(), kEINVAL);
}

TEST(KernfsTest, SymlinkTargetIsComputedEachTime) {
  auto fs = std::make_shared<Filesystem>("testfs", 1);
  int n = 0;
  Symlink s(*fs,
            [&n]() -> KResult<std::string> { return std::to_string(++n); });
  EXPECT_EQ(s.Readlink().value(), "1");
  EXPECT_EQ(s.Readlink().value(), "2");
  EXPECT_EQ(s.Stat().st_mode, S_IFLNK | 0777u);
}

}  // namespace
}  // namespace sandbox::fs::kernfs
