// The gofer file system through the VFS path operations, against a real
// Gofer server on a temporary directory.
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/fs/gofer/directory.h"
#include "sentry/fs/gofer/testing.h"
#include "sentry/vfs/xattr_ops.h"

namespace sandbox::fs::gofer {
namespace {

using ::gofer::testing::WriteFile;
using ::testing::IsSupersetOf;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

void ExpectStatEq(const abi::Stat& st, const struct stat& hs) {
  EXPECT_EQ(st.st_ino, hs.st_ino);
  EXPECT_EQ(st.st_mode, hs.st_mode);
  EXPECT_EQ(st.st_nlink, hs.st_nlink);
  EXPECT_EQ(st.st_uid, hs.st_uid);
  EXPECT_EQ(st.st_gid, hs.st_gid);
  EXPECT_EQ(st.st_size, hs.st_size);
  EXPECT_EQ(st.st_blocks, hs.st_blocks);
  EXPECT_EQ(st.st_blksize, hs.st_blksize);
  EXPECT_EQ(st.st_mtim.tv_sec, hs.st_mtim.tv_sec);
  EXPECT_EQ(st.st_mtim.tv_nsec, hs.st_mtim.tv_nsec);
  EXPECT_EQ(st.st_ctim.tv_sec, hs.st_ctim.tv_sec);
  EXPECT_EQ(st.st_ctim.tv_nsec, hs.st_ctim.tv_nsec);
}

void ExpectMatchesHost(const KResult<abi::Stat>& st, const std::string& host) {
  ASSERT_TRUE(st.ok()) << host << ": " << st.error().name();
  struct stat hs;
  ASSERT_EQ(lstat(host.c_str(), &hs), 0) << host;
  ExpectStatEq(st.value(), hs);
}

// Host FDs of this process open for I/O on files under `dir` (the
// in-process server's O_PATH handles are not counted).
int CountDataFds(const std::string& tree) {
  const std::string dir = std::filesystem::canonical(tree).string();
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (ec || target.rfind(dir + "/", 0) != 0) continue;
    std::ifstream info("/proc/self/fdinfo/" + e.path().filename().string());
    std::string line;
    unsigned flags = O_PATH;
    while (std::getline(info, line)) {
      if (line.rfind("flags:", 0) == 0)
        flags = std::stoul(line.substr(6), nullptr, 8);
    }
    if (!(flags & O_PATH)) ++n;
  }
  return n;
}

TEST_F(GoferFsTest, StatMatchesHostLstat) {
  WriteFile(Host("file"), "hello");
  ASSERT_EQ(mkdir(Host("dir").c_str(), 0750), 0);
  ASSERT_EQ(symlink("file", Host("link").c_str()), 0);
  ASSERT_EQ(mkfifo(Host("dir/fifo").c_str(), 0600), 0);
  Mount();
  ExpectMatchesHost(vfs::StatAt(Base(), "/file", 0), Host("file"));
  ExpectMatchesHost(vfs::StatAt(Base(), "/dir", 0), Host("dir"));
  ExpectMatchesHost(vfs::StatAt(Base(), "/dir/fifo", 0), Host("dir/fifo"));
  ExpectMatchesHost(vfs::StatAt(Base(), "/link", AT_SYMLINK_NOFOLLOW),
                    Host("link"));
  ExpectMatchesHost(vfs::StatAt(Base(), "/link", 0), Host("file"));
  ExpectMatchesHost(vfs::StatAt(Base(), "/", 0), tree_.root());
  auto st = vfs::StatAt(Base(), "/file", 0);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_dev, fs_->dev());
  EXPECT_ERRNO(vfs::StatAt(Base(), "/missing", 0), kENOENT);
  EXPECT_ERRNO(vfs::StatAt(Base(), "/file/x", 0), kENOTDIR);
}

TEST_F(GoferFsTest, ReadsMatchHost) {
  std::string big(300000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  WriteFile(Host("big"), big);
  Mount();
  auto f = Open("/big", O_RDONLY);
  ASSERT_OK(f);
  EXPECT_EQ(ReadAll(**f), big);
  vfs::IoContext ctx;
  uint8_t buf[10];
  auto n = (*f)->PRead(ctx, absl::MakeSpan(buf), 1000);
  ASSERT_OK(n);
  ASSERT_EQ(*n, 10u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 10),
            big.substr(1000, 10));
  EXPECT_ERRNO((*f)->Write(ctx, absl::MakeConstSpan(buf)), kEBADF);
  auto end = (*f)->Seek(-5, SEEK_END);
  ASSERT_OK(end);
  EXPECT_EQ(*end, static_cast<int64_t>(big.size() - 5));
}

TEST_F(GoferFsTest, WritesReachHostAndStatFollows) {
  WriteFile(Host("f"), "0123456789");
  Mount();
  {
    auto f = Open("/f", O_WRONLY);
    ASSERT_OK(f);
    ASSERT_OK(Write(**f, "ab"));
    EXPECT_EQ(HostRead(Host("f")), "ab23456789");
  }
  {
    auto f = Open("/f", O_WRONLY | O_APPEND);
    ASSERT_OK(f);
    ASSERT_OK(Write(**f, "XY"));
    EXPECT_EQ(HostRead(Host("f")), "ab23456789XY");
  }
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));
  {
    auto f = Open("/new", O_CREAT | O_EXCL | O_RDWR, 0640);
    ASSERT_OK(f);
    ASSERT_OK(Write(**f, "created"));
    EXPECT_EQ(HostRead(Host("new")), "created");
    struct stat hs;
    ASSERT_EQ(lstat(Host("new").c_str(), &hs), 0);
    EXPECT_EQ(hs.st_mode, S_IFREG | 0640u);
  }
  ExpectMatchesHost(vfs::StatAt(Base(), "/new", 0), Host("new"));
  {
    auto f = Open("/f", O_WRONLY | O_TRUNC);
    ASSERT_OK(f);
    EXPECT_EQ(HostRead(Host("f")), "");
  }
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));
  ASSERT_OK(vfs::TruncateAt(Base(), "/new", 3));
  EXPECT_EQ(HostRead(Host("new")), "cre");
  ExpectMatchesHost(vfs::StatAt(Base(), "/new", 0), Host("new"));
  EXPECT_ERRNO(Open("/new", O_CREAT | O_EXCL | O_RDWR), kEEXIST);
}

TEST_F(GoferFsTest, SymlinksResolveInTheSentry) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  WriteFile(Host("d/target"), "inside");
  WriteFile(tree_.outside() + "/secret", "outside");
  ASSERT_EQ(symlink("d/target", Host("rel").c_str()), 0);
  ASSERT_EQ(symlink("/d/target", Host("abs").c_str()), 0);
  ASSERT_EQ(symlink("../outside/secret", Host("escape").c_str()), 0);
  ASSERT_EQ(
      symlink((tree_.outside() + "/secret").c_str(), Host("hostabs").c_str()),
      0);
  ASSERT_EQ(symlink("d", Host("dirlink").c_str()), 0);
  Mount();
  for (const char* p : {"/rel", "/abs", "/dirlink/target"}) {
    auto f = Open(p, O_RDONLY);
    ASSERT_OK(f);
    EXPECT_EQ(ReadAll(**f), "inside") << p;
  }
  // ".." at the sandbox root stays there; host paths mean nothing here.
  EXPECT_ERRNO(Open("/escape", O_RDONLY), kENOENT);
  EXPECT_ERRNO(Open("/hostabs", O_RDONLY), kENOENT);
  auto target = vfs::ReadlinkAt(Base(), "/rel");
  ASSERT_OK(target);
  EXPECT_EQ(*target, "d/target");
  EXPECT_ERRNO(Open("/rel", O_RDONLY | O_NOFOLLOW), kELOOP);
  ASSERT_OK(vfs::SymlinkAt(Base(), "d/target", "/made"));
  char buf[64] = {};
  ASSERT_EQ(readlink(Host("made").c_str(), buf, sizeof(buf) - 1), 8);
  EXPECT_STREQ(buf, "d/target");
  auto f = Open("/made", O_RDONLY);
  ASSERT_OK(f);
  EXPECT_EQ(ReadAll(**f), "inside");
}

TEST_F(GoferFsTest, CachedOperationsMakeNoGoferCall) {
  ASSERT_EQ(mkdir(Host("a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Host("a/b").c_str(), 0755), 0);
  WriteFile(Host("a/b/f"), "data");
  Mount();
  ASSERT_OK(vfs::StatAt(Base(), "/a/b/f", 0));
  EXPECT_ERRNO(vfs::StatAt(Base(), "/a/nope", 0), kENOENT);
  uint64_t before = fs_->rpc_count();
  for (int i = 0; i < 10; ++i) {
    ExpectMatchesHost(vfs::StatAt(Base(), "/a/b/f", 0), Host("a/b/f"));
    EXPECT_ERRNO(vfs::StatAt(Base(), "/a/nope", 0), kENOENT);
  }
  EXPECT_EQ(fs_->rpc_count(), before);

  // open + read + close: one Open call the first time, none after.
  {
    auto f = Open("/a/b/f", O_RDONLY);
    ASSERT_OK(f);
    EXPECT_EQ(ReadAll(**f), "data");
  }
  before = fs_->rpc_count();
  for (int i = 0; i < 10; ++i) {
    auto f = Open("/a/b/f", O_RDONLY);
    ASSERT_OK(f);
    EXPECT_EQ(ReadAll(**f), "data");
  }
  EXPECT_EQ(fs_->rpc_count(), before);
  // An O_RDWR FD serves read-only and write-only opens too.
  {
    auto f = Open("/a/b/f", O_RDWR);
    ASSERT_OK(f);
  }
  before = fs_->rpc_count();
  {
    auto f = Open("/a/b/f", O_WRONLY);
    ASSERT_OK(f);
    ASSERT_OK(Write(**f, "DA"));
  }
  EXPECT_EQ(fs_->rpc_count(), before);
  // A stat after a write refetches by fstat on the FD: no Gofer call.
  ExpectMatchesHost(vfs::StatAt(Base(), "/a/b/f", 0), Host("a/b/f"));
  EXPECT_EQ(fs_->rpc_count(), before);
  // A created file's FD is cached by its creation.
  before = fs_->rpc_count();
  {
    auto f = Open("/a/new", O_CREAT | O_WRONLY, 0644);
    ASSERT_OK(f);
    ASSERT_OK(Write(**f, "x"));
  }
  // A Walk that finds nothing (then cached as absent), and the Create.
  EXPECT_EQ(fs_->rpc_count(), before + 2);
}

TEST_F(GoferFsTest, DirectoryListing) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  std::vector<std::string> want = {".", ".."};
  for (int i = 0; i < 1300; ++i) {  // more than one Getdents batch
    std::string name = "entry_" + std::to_string(i);
    WriteFile(Host("d/" + name), "");
    want.push_back(name);
  }
  Mount();
  EXPECT_THAT(List("/d"), UnorderedElementsAreArray(want));
  EXPECT_THAT(List("/"), UnorderedElementsAreArray(
                             std::vector<std::string>{".", "..", "d"}));
  // Resuming after a full buffer neither repeats nor skips an entry.
  auto f = Open("/d", O_RDONLY | O_DIRECTORY);
  ASSERT_OK(f);
  std::vector<std::string> got;
  for (;;) {
    size_t taken = 0;
    ASSERT_OK((*f)->IterDirents([&](const vfs::DirEntry& e) {
      if (taken == 7) return false;
      ++taken;
      got.emplace_back(e.name);
      return true;
    }));
    if (taken == 0) break;
  }
  EXPECT_THAT(got, UnorderedElementsAreArray(want));
  // The inode numbers are the host's.
  auto g = Open("/d", O_RDONLY | O_DIRECTORY);
  ASSERT_OK(g);
  ASSERT_OK((*g)->IterDirents([&](const vfs::DirEntry& e) {
    if (std::string_view(e.name) == "entry_5") {
      struct stat hs;
      EXPECT_EQ(lstat(Host("d/entry_5").c_str(), &hs), 0);
      EXPECT_EQ(e.ino, hs.st_ino);
      EXPECT_EQ(e.type, DT_REG);
    }
    return true;
  }));
}

// With ListingMode::kAlwaysPlus, getdents on an exclusive mount is
// GetdentsPlus: every entry comes with its inode, so stat of each (nftw,
// ls -l, find) makes no Gofer call.
TEST_F(GoferFsTest, PlusListingCachesEveryEntryForStat) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Host("d/sub").c_str(), 0700), 0);
  ASSERT_EQ(symlink("sub", Host("d/lnk").c_str()), 0);
  ASSERT_EQ(mkfifo(Host("d/fifo").c_str(), 0600), 0);
  std::vector<std::string> names = {"sub", "lnk", "fifo"};
  for (int i = 0; i < 700; ++i) {  // two GetdentsPlus batches
    names.push_back("f" + std::to_string(i));
    WriteFile(Host("d/" + names.back()), std::string(i % 7, 'x'));
  }
  Options opts;
  opts.listing = ListingMode::kAlwaysPlus;
  Mount(opts);
  uint64_t before = fs_->rpc_count();
  EXPECT_EQ(List("/d").size(), names.size() + 2);
  // Walk of "d", two GetdentsPlus batches and the end, and the Close
  // batches of the handles of entries already known (none here).
  EXPECT_LE(fs_->rpc_count() - before, 5u);
  before = fs_->rpc_count();
  for (const std::string& n : names) {
    ExpectMatchesHost(vfs::StatAt(Base(), "/d/" + n, AT_SYMLINK_NOFOLLOW),
                      Host("d/" + n));
  }
  EXPECT_EQ(fs_->rpc_count(), before) << "a stat after the listing walked";
  // Listing again reuses the cached inodes (their new handles are closed
  // in batches) and leaves them right.
  EXPECT_EQ(List("/d").size(), names.size() + 2);
  ExpectMatchesHost(vfs::StatAt(Base(), "/d/f3", 0), Host("d/f3"));
  // A file created on the host after the listing is not in the cache: it
  // is walked as before.
  WriteFile(Host("d/late"), "l");
  ExpectMatchesHost(vfs::StatAt(Base(), "/d/late", 0), Host("d/late"));
}

// The default (adaptive) listing: a bare listing (ls) makes plain Getdents
// calls only, so the Gofer stats no entry; one walk after it (ls, then cat
// a file) changes nothing.
TEST_F(GoferFsTest, BareListingIsPlainGetdents) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  for (int i = 0; i < 1300; ++i) WriteFile(Host("d/f" + std::to_string(i)), "");
  Mount();
  GoferFilesystem::CallCounts& c = fs_->calls();
  EXPECT_EQ(List("/d").size(), 1302u);
  EXPECT_EQ(c.getdents_plus.load(), 0u);
  EXPECT_GE(c.getdents.load(), 3u);  // 512 entries a call
  const uint64_t walks = c.walk.load();
  ExpectMatchesHost(vfs::StatAt(Base(), "/d/f7", 0), Host("d/f7"));
  EXPECT_EQ(c.walk.load(), walks + 1);
  EXPECT_EQ(c.getdents_plus.load(), 0u);
  EXPECT_EQ(List("/d").size(), 1302u);
  EXPECT_EQ(c.getdents_plus.load(), 0u);
}

// A walker (ls -l, nftw: a listing, then the lstat of each entry): the
// second walk after a plain listing fetches the directory again with
// GetdentsPlus, kPrefetchEntries entries at a time, so the other entries'
// stats make no Gofer call; directories below it list with GetdentsPlus at
// once; a directory whose entries are all cached lists plain again.
TEST_F(GoferFsTest, WalkerSwitchesToGetdentsPlus) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  for (const char* sub : {"d/sub1", "d/sub2"}) {
    ASSERT_EQ(mkdir(Host(sub).c_str(), 0755), 0);
    for (int i = 0; i < 700; ++i) {
      WriteFile(Host(std::string(sub) + "/g" + std::to_string(i)), "");
    }
  }
  // More than one prefetch part.
  constexpr int kFiles = GoferDirectory::kPrefetchEntries + 900;
  for (int i = 0; i < kFiles; ++i) {
    WriteFile(Host("d/f" + std::to_string(i)), std::string(i % 5, 'x'));
  }
  Mount();
  GoferFilesystem::CallCounts& c = fs_->calls();
  auto names = List("/d");
  ASSERT_EQ(names.size(), kFiles + 4u);
  EXPECT_EQ(c.getdents_plus.load(), 0u);
  const uint64_t walks = c.walk.load(), getdents = c.getdents.load();
  for (const std::string& n : names) {
    if (n == "." || n == "..") continue;
    ExpectMatchesHost(vfs::StatAt(Base(), "/d/" + n, AT_SYMLINK_NOFOLLOW),
                      Host("d/" + n));
  }
  // Two walks show the walker; one more finds the first part's end.
  EXPECT_LE(c.walk.load() - walks, 3u);
  EXPECT_GE(c.getdents_plus.load(), 6u);  // about kFiles / 512
  EXPECT_LE(c.getdents_plus.load(), 9u);
  EXPECT_EQ(c.getdents.load(), getdents);
  // Below: GetdentsPlus at once, and no call for the stats.
  const uint64_t plus = c.getdents_plus.load();
  EXPECT_EQ(List("/d/sub1").size(), 702u);
  EXPECT_EQ(c.getdents.load(), getdents);
  EXPECT_GE(c.getdents_plus.load(), plus + 2);
  uint64_t before = fs_->rpc_count();
  for (int i = 0; i < 700; ++i) {
    std::string p = "d/sub1/g" + std::to_string(i);
    ExpectMatchesHost(vfs::StatAt(Base(), "/" + p, AT_SYMLINK_NOFOLLOW),
                      Host(p));
  }
  EXPECT_EQ(fs_->rpc_count(), before) << "a stat after the listing walked";
  // Everything in d is cached: listing it again is plain, and the stats
  // still make no call.
  const uint64_t plus2 = c.getdents_plus.load();
  EXPECT_EQ(List("/d").size(), kFiles + 4u);
  EXPECT_EQ(c.getdents_plus.load(), plus2);
  before = fs_->rpc_count();
  for (int i = 0; i < kFiles; i += 97) {
    std::string p = "d/f" + std::to_string(i);
    ExpectMatchesHost(vfs::StatAt(Base(), "/" + p, 0), Host(p));
  }
  EXPECT_EQ(fs_->rpc_count(), before);
}

// A batch shorter than asked is the end of the directory, and an exclusive
// mount remembers where it ended: a small directory's listing is one
// Getdents call, and the guest's last getdents64 (from the end) none. The
// Sentry's own changes forget the end.
TEST_F(GoferFsTest, ListingEndIsKnown) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Host("e").c_str(), 0755), 0);
  for (int i = 0; i < 5; ++i) WriteFile(Host("d/f" + std::to_string(i)), "");
  Mount();
  GoferFilesystem::CallCounts& c = fs_->calls();
  auto f = Open("/d", O_RDONLY | O_DIRECTORY);
  ASSERT_OK(f);
  const uint64_t g0 = c.getdents.load();
  int n = 0;
  auto count = [&](const vfs::DirEntry&) {
    ++n;
    return true;
  };
  ASSERT_OK((*f)->IterDirents(count));
  EXPECT_EQ(n, 7);
  EXPECT_EQ(c.getdents.load(), g0 + 1);
  ASSERT_OK((*f)->IterDirents(count));  // from the end
  EXPECT_EQ(n, 7);
  EXPECT_EQ(c.getdents.load(), g0 + 1);
  EXPECT_EQ(List("/e").size(), 2u);  // empty: one call
  EXPECT_EQ(List("/e").size(), 2u);  // none
  EXPECT_EQ(c.getdents.load(), g0 + 2);
  ASSERT_OK(Open("/e/new", O_CREAT | O_WRONLY));
  EXPECT_THAT(List("/e"), UnorderedElementsAre(".", "..", "new"));
  ASSERT_OK(vfs::RenameAt(Base(), "/d/f0", Base(), "/e/f0", 0));
  EXPECT_THAT(List("/e"), UnorderedElementsAre(".", "..", "new", "f0"));
  EXPECT_EQ(List("/d").size(), 6u);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/e/new", 0));
  EXPECT_THAT(List("/e"), UnorderedElementsAre(".", "..", "f0"));
}

// A shared mount remembers no end: a listing sees files the host added
// since the last one.
TEST_F(GoferFsTest, SharedMountListingSeesHostChanges) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  WriteFile(Host("d/a"), "");
  Options opts;
  opts.exclusive = false;
  Mount(opts);
  EXPECT_THAT(List("/d"), UnorderedElementsAre(".", "..", "a"));
  WriteFile(Host("d/b"), "");
  EXPECT_THAT(List("/d"), UnorderedElementsAre(".", "..", "a", "b"));
  ASSERT_EQ(mkdir(Host("e").c_str(), 0755), 0);
  EXPECT_THAT(List("/e"), UnorderedElementsAre(".", ".."));
  WriteFile(Host("e/c"), "");
  EXPECT_THAT(List("/e"), UnorderedElementsAre(".", "..", "c"));
}

TEST_F(GoferFsTest, ListingRespectsTheNameCacheBound) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  for (int i = 0; i < 300; ++i) WriteFile(Host("d/f" + std::to_string(i)), "");
  Options opts;
  opts.max_cached_inodes = 16;
  Mount(opts);
  EXPECT_EQ(List("/d").size(), 302u);
  EXPECT_LE(fs_->cached_entries().load(), 17);
  for (int i = 0; i < 300; ++i) {
    std::string p = "d/f" + std::to_string(i);
    ExpectMatchesHost(vfs::StatAt(Base(), "/" + p, 0), Host(p));
  }
  EXPECT_LE(fs_->cached_entries().load(), 17);
}

TEST_F(GoferFsTest, SharedMountListingCachesNothing) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  WriteFile(Host("d/f"), "one");
  Options opts;
  opts.exclusive = false;
  Mount(opts);
  EXPECT_EQ(List("/d").size(), 3u);
  WriteFile(Host("d/f"), "longer now");
  const uint64_t before = fs_->rpc_count();
  ExpectMatchesHost(vfs::StatAt(Base(), "/d/f", 0), Host("d/f"));
  EXPECT_GT(fs_->rpc_count(), before);  // revalidated, not from a listing
}

// Renames into (and out of, and between) subdirectories on a shared mount
// (runsc do --bind): the host sees them and the Sentry's names follow.
TEST_F(GoferFsTest, SharedMountRenamesIntoSubdirectories) {
  ASSERT_EQ(mkdir(Host("host_sub").c_str(), 0755), 0);
  Options opts;
  opts.exclusive = false;
  Mount(opts);
  ASSERT_OK(vfs::MkdirAt(Base(), "/sub", 0755, 0));
  ASSERT_OK(vfs::MkdirAt(Base(), "/sub/deeper", 0755, 0));
  {
    auto f = Open("/f", O_CREAT | O_WRONLY, 0644);
    ASSERT_OK(f);
    ASSERT_OK(Write(**f, "moved"));
  }
  ASSERT_OK(vfs::RenameAt(Base(), "/f", Base(), "/sub/f", 0));
  EXPECT_EQ(HostRead(Host("sub/f")), "moved");
  EXPECT_EQ(HostRead(Host("f")), "<missing>");
  ExpectMatchesHost(vfs::StatAt(Base(), "/sub/f", 0), Host("sub/f"));
  EXPECT_ERRNO(vfs::StatAt(Base(), "/f", 0), kENOENT);
  ASSERT_OK(vfs::RenameAt(Base(), "/sub/f", Base(), "/sub/deeper/g",
                          RENAME_NOREPLACE));
  ASSERT_OK(vfs::RenameAt(Base(), "/sub/deeper/g", Base(), "/host_sub/g", 0));
  EXPECT_EQ(HostRead(Host("host_sub/g")), "moved");
  {
    auto f = Open("/host_sub/g", O_RDONLY);
    ASSERT_OK(f);
    EXPECT_EQ(ReadAll(**f), "moved");
  }
  // A file kept open across the move, and a directory moved.
  auto kept = Open("/host_sub/g", O_RDWR);
  ASSERT_OK(kept);
  ASSERT_OK(vfs::RenameAt(Base(), "/host_sub/g", Base(), "/g", 0));
  ASSERT_OK(Write(**kept, "M"));
  EXPECT_EQ(HostRead(Host("g")), "Moved");
  ASSERT_OK(
      vfs::RenameAt(Base(), "/sub/deeper", Base(), "/host_sub/deeper", 0));
  ExpectMatchesHost(vfs::StatAt(Base(), "/host_sub/deeper", 0),
                    Host("host_sub/deeper"));
}

TEST_F(GoferFsTest, NameChanges) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  WriteFile(Host("d/f"), "f");
  WriteFile(Host("g"), "g");
  Mount();
  ASSERT_OK(vfs::MkdirAt(Base(), "/m", 0750, 0));
  struct stat hs;
  ASSERT_EQ(lstat(Host("m").c_str(), &hs), 0);
  EXPECT_TRUE(S_ISDIR(hs.st_mode));
  EXPECT_EQ(hs.st_mode & 07777, 0750u);
  ExpectMatchesHost(vfs::StatAt(Base(), "/", 0), tree_.root());  // nlink
  EXPECT_ERRNO(vfs::MkdirAt(Base(), "/m", 0750, 0), kEEXIST);

  ASSERT_OK(vfs::MknodAt(Base(), "/m/fifo", S_IFIFO | 0600, 0, 0));
  ASSERT_EQ(lstat(Host("m/fifo").c_str(), &hs), 0);
  EXPECT_TRUE(S_ISFIFO(hs.st_mode));

  // Hard links share one inode.
  ASSERT_OK(vfs::LinkAt(Base(), "/g", Base(), "/m/g2", 0));
  EXPECT_EQ(HostRead(Host("m/g2")), "g");
  auto a = vfs::StatAt(Base(), "/g", 0);
  auto b = vfs::StatAt(Base(), "/m/g2", 0);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(a->st_ino, b->st_ino);
  EXPECT_EQ(a->st_nlink, 2u);
  EXPECT_EQ(b->st_nlink, 2u);

  ASSERT_OK(vfs::RenameAt(Base(), "/d/f", Base(), "/m/f2", 0));
  EXPECT_EQ(HostRead(Host("m/f2")), "f");
  EXPECT_NE(access(Host("d/f").c_str(), F_OK), 0);
  EXPECT_ERRNO(vfs::StatAt(Base(), "/d/f", 0), kENOENT);
  ExpectMatchesHost(vfs::StatAt(Base(), "/m/f2", 0), Host("m/f2"));
  EXPECT_ERRNO(vfs::RenameAt(Base(), "/g", Base(), "/m/f2", RENAME_NOREPLACE),
               kEEXIST);
  ASSERT_OK(vfs::RenameAt(Base(), "/g", Base(), "/m/f2", RENAME_EXCHANGE));
  EXPECT_EQ(HostRead(Host("g")), "f");
  EXPECT_EQ(HostRead(Host("m/f2")), "g");
  {
    auto f = Open("/g", O_RDONLY);
    ASSERT_OK(f);
    EXPECT_EQ(ReadAll(**f), "f");
  }
  // Replacing rename.
  ASSERT_OK(vfs::RenameAt(Base(), "/g", Base(), "/m/f2", 0));
  EXPECT_EQ(HostRead(Host("m/f2")), "f");
  EXPECT_ERRNO(vfs::StatAt(Base(), "/g", 0), kENOENT);

  EXPECT_ERRNO(vfs::UnlinkAt(Base(), "/m", AT_REMOVEDIR), kENOTEMPTY);
  EXPECT_ERRNO(vfs::UnlinkAt(Base(), "/m", 0), kEISDIR);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/m/f2", 0));
  ASSERT_OK(vfs::UnlinkAt(Base(), "/m/g2", 0));
  ASSERT_OK(vfs::UnlinkAt(Base(), "/m/fifo", 0));
  EXPECT_ERRNO(vfs::UnlinkAt(Base(), "/m/fifo", 0), kENOENT);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/m", AT_REMOVEDIR));
  EXPECT_NE(access(Host("m").c_str(), F_OK), 0);
  EXPECT_ERRNO(vfs::StatAt(Base(), "/m", 0), kENOENT);
  EXPECT_THAT(List("/"), UnorderedElementsAreArray(
                             std::vector<std::string>{".", "..", "d"}));
  ExpectMatchesHost(vfs::StatAt(Base(), "/", 0), tree_.root());
}

TEST_F(GoferFsTest, FallocateOnTheHost) {
  ::gofer::testing::WriteFile(Host("f"), std::string(8192, 'a'));
  Mount();
  auto f = Open("/f", O_RDWR);
  ASSERT_OK(f);
  ASSERT_OK(vfs::Fallocate(**f, 0, 8192, 4096));
  struct stat hs;
  ASSERT_EQ(lstat(Host("f").c_str(), &hs), 0);
  EXPECT_EQ(hs.st_size, 12288);
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));
  auto punched =
      vfs::Fallocate(**f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096);
  if (!punched.ok() && punched.error() == kEOPNOTSUPP) {
    GTEST_SKIP() << "no hole punching on the test directory";
  }
  ASSERT_OK(punched);
  std::string host = HostRead(Host("f"));
  EXPECT_EQ(host.substr(0, 4096), std::string(4096, '\0'));
  EXPECT_EQ(host.substr(4096, 4096), std::string(4096, 'a'));
  EXPECT_ERRNO(vfs::Fallocate(**f, FALLOC_FL_COLLAPSE_RANGE, 0, 4096),
               kEOPNOTSUPP);
}

TEST_F(GoferFsTest, FifoPipesInTheSentry) {
  ASSERT_EQ(mkfifo(Host("fifo").c_str(), 0600), 0);
  Mount();
  auto rw = Open("/fifo", O_RDWR);  // neither end waits
  ASSERT_OK(rw);
  auto w = Open("/fifo", O_WRONLY | O_NONBLOCK);  // a reader exists
  ASSERT_OK(w);
  ASSERT_OK(Write(**w, "through"));
  vfs::IoContext ctx;
  uint8_t buf[16];
  auto n = (*rw)->Read(ctx, absl::MakeSpan(buf));
  ASSERT_OK(n);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), *n), "through");
  ExpectMatchesHost(vfs::StatAt(Base(), "/fifo", 0), Host("fifo"));
  ASSERT_OK(vfs::MknodAt(Base(), "/sock", S_IFSOCK | 0600, 0, 0));
  EXPECT_ERRNO(Open("/sock", O_RDONLY), kENXIO);
}

TEST_F(GoferFsTest, OpenUnlinkedFileKeepsWorking) {
  WriteFile(Host("f"), "keep");
  Mount();
  auto f = Open("/f", O_RDWR);
  ASSERT_OK(f);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/f", 0));
  auto st = (*f)->Stat();
  ASSERT_OK(st);
  EXPECT_EQ(st->st_nlink, 0u);
  EXPECT_EQ(ReadAll(**f), "keep");
}

TEST_F(GoferFsTest, SetAttrReachesHost) {
  WriteFile(Host("f"), "abc");
  ASSERT_EQ(symlink("f", Host("link").c_str()), 0);
  Mount();
  ASSERT_OK(vfs::ChmodAt(Base(), "/f", 0600, 0));
  struct stat hs;
  ASSERT_EQ(lstat(Host("f").c_str(), &hs), 0);
  EXPECT_EQ(hs.st_mode & 07777, 0600u);
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));

  const abi::Timespec times[2] = {{2000000, 7}, {1000000, 5}};
  ASSERT_OK(vfs::UtimensAt(Base(), "/f", times, 0));
  ASSERT_EQ(lstat(Host("f").c_str(), &hs), 0);
  EXPECT_EQ(hs.st_atim.tv_sec, 2000000);
  EXPECT_EQ(hs.st_atim.tv_nsec, 7);
  EXPECT_EQ(hs.st_mtim.tv_sec, 1000000);
  EXPECT_EQ(hs.st_mtim.tv_nsec, 5);
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));

  // The ids must exist on the host (Bazel's sandbox maps only a few).
  WriteFile(Host("probe"), "");
  if (lchown(Host("probe").c_str(), 1234, 5678) == 0) {
    ASSERT_OK(vfs::ChownAt(Base(), "/f", 1234, 5678, 0));
    ASSERT_EQ(lstat(Host("f").c_str(), &hs), 0);
    EXPECT_EQ(hs.st_uid, 1234u);
    EXPECT_EQ(hs.st_gid, 5678u);
    // lchown: the link itself.
    ASSERT_OK(vfs::ChownAt(Base(), "/link", 4321, 8765, AT_SYMLINK_NOFOLLOW));
    ASSERT_EQ(lstat(Host("link").c_str(), &hs), 0);
    EXPECT_EQ(hs.st_uid, 4321u);
    ExpectMatchesHost(vfs::StatAt(Base(), "/link", AT_SYMLINK_NOFOLLOW),
                      Host("link"));
    ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));
  }
  EXPECT_ERRNO(vfs::ChmodAt(Base(), "/link", 0600, AT_SYMLINK_NOFOLLOW),
               kEOPNOTSUPP);

  // O_TRUNC with the file's writable FD cached: no Gofer call.
  { ASSERT_OK(Open("/f", O_RDWR)); }
  const uint64_t before = fs_->rpc_count();
  { ASSERT_OK(Open("/f", O_WRONLY | O_TRUNC)); }
  EXPECT_EQ(fs_->rpc_count(), before);
  EXPECT_EQ(HostRead(Host("f")), "");
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));
}

TEST_F(GoferFsTest, StatFsIsTheHosts) {
  Mount();
  auto st = vfs::StatFsAt(Base(), "/");
  ASSERT_OK(st);
  struct statfs hs;
  ASSERT_EQ(statfs(tree_.root().c_str(), &hs), 0);
  EXPECT_EQ(st->type, kV9fsMagic);
  EXPECT_EQ(st->block_size, static_cast<uint64_t>(hs.f_bsize));
  EXPECT_EQ(st->blocks, hs.f_blocks);
  EXPECT_EQ(st->name_max, static_cast<uint64_t>(hs.f_namelen));
}

TEST_F(GoferFsTest, Xattrs) {
  WriteFile(Host("f"), "");
  if (setxattr(Host("f").c_str(), "user.probe", "1", 1, 0) != 0) {
    GTEST_SKIP() << "no user xattrs on the test directory";
  }
  ASSERT_EQ(removexattr(Host("f").c_str(), "user.probe"), 0);
  Mount();
  ASSERT_OK(vfs::SetXattrAt(Base(), "/f", true, "user.k", "value", 0));
  char buf[32] = {};
  ASSERT_EQ(getxattr(Host("f").c_str(), "user.k", buf, sizeof(buf)), 5);
  EXPECT_STREQ(buf, "value");
  auto v = vfs::GetXattrAt(Base(), "/f", true, "user.k");
  ASSERT_OK(v);
  EXPECT_EQ(*v, "value");
  auto names = vfs::ListXattrAt(Base(), "/f", true);
  ASSERT_OK(names);
  EXPECT_THAT(*names, IsSupersetOf({std::string("user.k")}));
  EXPECT_ERRNO(vfs::SetXattrAt(Base(), "/f", true, "user.k", "v", XATTR_CREATE),
               kEEXIST);
  ASSERT_OK(vfs::RemoveXattrAt(Base(), "/f", true, "user.k"));
  EXPECT_ERRNO(vfs::GetXattrAt(Base(), "/f", true, "user.k"), kENODATA);
}

TEST_F(GoferFsTest, FsyncAndSeekData) {
  WriteFile(Host("f"), "abc");
  Mount();
  auto f = Open("/f", O_RDWR | O_SYNC);
  ASSERT_OK(f);
  ASSERT_OK(Write(**f, "xyz"));
  ASSERT_OK((*f)->Sync(false));
  ASSERT_OK((*f)->Sync(true));
  auto d = (*f)->Seek(0, SEEK_DATA);
  ASSERT_OK(d);
  EXPECT_EQ(*d, 0);
  EXPECT_ERRNO((*f)->Seek(10, SEEK_DATA), kENXIO);
}

TEST_F(GoferFsTest, HostFdLruEvictionPastTheCap) {
  constexpr int kFiles = 24;
  for (int i = 0; i < kFiles; ++i) {
    WriteFile(Host("f" + std::to_string(i)), "content " + std::to_string(i));
  }
  Options opts;
  opts.max_host_fds = 4;
  Mount(opts);
  std::vector<std::shared_ptr<vfs::VfsFile>> files;
  for (int i = 0; i < kFiles; ++i) {
    auto f = Open("/f" + std::to_string(i), O_RDONLY);
    ASSERT_OK(f);
    files.push_back(std::move(f).value());
    EXPECT_LE(fs_->fd_cache().size(), 4u);
  }
  ASSERT_OK(vfs::StatFsAt(Base(), "/"));  // see below
  EXPECT_EQ(CountDataFds(tree_.root()), 4);
  EXPECT_GE(fs_->fd_cache().evictions(), static_cast<uint64_t>(kFiles - 4));
  // Every description still reads its own file (evicted FDs are opened
  // again), several rounds.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kFiles; ++i) {
      vfs::IoContext ctx;
      char buf[64];
      auto n = files[i]->PRead(
          ctx, absl::MakeSpan(reinterpret_cast<uint8_t*>(buf), sizeof(buf)), 0);
      ASSERT_OK(n);
      EXPECT_EQ(std::string(buf, *n), "content " + std::to_string(i));
    }
  }
  EXPECT_LE(fs_->fd_cache().size(), 4u);
  // One more round trip: the in-process server has closed its copies of
  // the FDs it donated before it answers.
  ASSERT_OK(vfs::StatFsAt(Base(), "/"));
  EXPECT_LE(CountDataFds(tree_.root()), 4);
}

// Exclusive mounts keep walked dentries (a repeated walk allocates none),
// bounded by a quarter of max_cached_inodes; the Sentry's own unlink and
// rename take them out at once. Shared mounts keep none.
TEST_F(GoferFsTest, DentryCacheOnExclusiveMounts) {
  ASSERT_EQ(mkdir(Host("d").c_str(), 0755), 0);
  for (int i = 0; i < 100; ++i) WriteFile(Host("d/f" + std::to_string(i)), "");
  Options opts;
  opts.max_cached_inodes = 64;
  Mount(opts);
  ASSERT_NE(fs_->dentry_cache(), nullptr);
  ASSERT_OK(vfs::StatAt(Base(), "/d/f1", 0));
  EXPECT_GE(fs_->dentry_cache()->size(), 2u);  // d and d/f1
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(vfs::StatAt(Base(), "/d/f" + std::to_string(i), 0));
    EXPECT_LE(fs_->dentry_cache()->size(), 16u);
    EXPECT_LE(fs_->cached_entries().load(), 65);
  }
  ASSERT_OK(vfs::UnlinkAt(Base(), "/d/f99", 0));
  EXPECT_ERRNO(vfs::StatAt(Base(), "/d/f99", 0), kENOENT);
  ASSERT_OK(vfs::RenameAt(Base(), "/d/f98", Base(), "/d/g", 0));
  EXPECT_ERRNO(vfs::StatAt(Base(), "/d/f98", 0), kENOENT);
  ExpectMatchesHost(vfs::StatAt(Base(), "/d/g", 0), Host("d/g"));
}

TEST_F(GoferFsTest, NoDentryCacheOnSharedMounts) {
  Options opts;
  opts.exclusive = false;
  Mount(opts);
  EXPECT_EQ(fs_->dentry_cache(), nullptr);
}

TEST_F(GoferFsTest, NameCacheIsBounded) {
  for (int i = 0; i < 200; ++i) WriteFile(Host("f" + std::to_string(i)), "");
  Options opts;
  opts.max_cached_inodes = 16;
  Mount(opts);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 200; ++i) {
      std::string p = "f" + std::to_string(i);
      ExpectMatchesHost(vfs::StatAt(Base(), "/" + p, 0), Host(p));
      EXPECT_LE(fs_->cached_entries().load(), 17);
    }
  }
}

TEST_F(GoferFsTest, SharedMountSeesHostChanges) {
  WriteFile(Host("f"), "one");
  Options opts;
  opts.exclusive = false;
  Mount(opts);
  auto f = Open("/f", O_RDONLY);  // keeps the dentry alive
  ASSERT_OK(f);
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));
  EXPECT_ERRNO(vfs::StatAt(Base(), "/g", 0), kENOENT);
  WriteFile(Host("f"), "longer now");
  WriteFile(Host("g"), "new");
  ExpectMatchesHost(vfs::StatAt(Base(), "/f", 0), Host("f"));
  ExpectMatchesHost(vfs::StatAt(Base(), "/g", 0), Host("g"));
}

TEST_F(GoferFsTest, ReadOnlyServer) {
  WriteFile(Host("f"), "ro");
  ::gofer::ServerOptions sopts;
  sopts.read_only = true;
  Mount({}, sopts);
  EXPECT_TRUE(fs_->read_only());
  auto f = Open("/f", O_RDONLY);
  ASSERT_OK(f);
  EXPECT_EQ(ReadAll(**f), "ro");
  EXPECT_ERRNO(Open("/f", O_WRONLY), kEROFS);
  EXPECT_ERRNO(Open("/new", O_CREAT | O_WRONLY), kEROFS);
  EXPECT_ERRNO(vfs::MkdirAt(Base(), "/d", 0755, 0), kEROFS);
  EXPECT_ERRNO(vfs::UnlinkAt(Base(), "/f", 0), kEROFS);
  EXPECT_EQ(HostRead(Host("f")), "ro");
}

}  // namespace
}  // namespace sandbox::fs::gofer
