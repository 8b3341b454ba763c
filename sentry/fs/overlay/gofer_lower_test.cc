// The overlay over a real Gofer (in-process server on a temporary host
// directory, read-only as runsc do serves the host root) with a tmpfs
// upper: every kind of change works inside, and the host tree (names,
// types, modes, owners, sizes, contents, mtimes of files and directories)
// is exactly the same afterwards. Copy-up reads through the Gofer's host FD:
// the number of Gofer calls does not grow with the file's size.
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "gtest/gtest.h"
#include "sentry/fs/gofer/testing.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/overlay/testing.h"
#include "sentry/fs/tmpfs/tmpfs.h"

namespace sandbox::fs::overlay {
namespace {

// lstat of everything below `dir` on the host, with file contents.
void HostSnapshot(const std::string& root, const std::string& rel,
                  std::map<std::string, std::string>* out) {
  std::string dir = root + rel;
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string r = rel + "/" + name;
    struct stat st;
    ASSERT_EQ(lstat((root + r).c_str(), &st), 0);
    std::string v =
        std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + ":" +
        std::to_string(st.st_gid) + " " + std::to_string(st.st_nlink) + " " +
        std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) +
        "." + std::to_string(st.st_mtim.tv_nsec) + " " +
        std::to_string(st.st_ino);
    if (S_ISREG(st.st_mode)) {
      std::string data;
      int fd = open((root + r).c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      char buf[65536];
      for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) data.append(buf, n);
      close(fd);
      v += " #" + std::to_string(std::hash<std::string>()(data));
    } else if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = readlink((root + r).c_str(), buf, sizeof buf);
      v += " -> " + std::string(buf, n > 0 ? n : 0);
    }
    (*out)[r] = v;
    if (S_ISDIR(st.st_mode)) HostSnapshot(root, r, out);
  }
  closedir(d);
}

class GoferLowerTest : public gofer::GoferFsTest {
 protected:
  void SetUp() override {
    auto mf = platform::MemoryFile::Create(uint64_t{256} << 20);
    ASSERT_TRUE(mf.ok());
    mf_ = std::move(*mf);
    std::string r = tree_.root();
    std::filesystem::create_directories(r + "/etc/ssl");
    std::filesystem::create_directories(r + "/usr/lib/empty");
    ::gofer::testing::WriteFile(r + "/etc/os-release", "ID=host\n");
    ::gofer::testing::WriteFile(r + "/etc/passwd", "root:x:0:0\n");
    ::gofer::testing::WriteFile(r + "/etc/ssl/cert", "CERT");
    ::gofer::testing::WriteFile(r + "/usr/lib/small", "tiny");
    ::gofer::testing::WriteFile(r + "/usr/lib/libc.so",
                                std::string(3 << 20, 'L'));
    ASSERT_EQ(
        link((r + "/etc/passwd").c_str(), (r + "/etc/passwd.lnk").c_str()), 0);
    ASSERT_EQ(symlink("ssl/cert", (r + "/etc/cert").c_str()), 0);
    ASSERT_EQ(chmod((r + "/usr/lib").c_str(), 0751), 0);
    struct timespec old[2] = {{1000000, 1}, {2000000, 2}};
    ASSERT_EQ(utimensat(AT_FDCWD, (r + "/etc/os-release").c_str(), old, 0), 0);
    ASSERT_EQ(utimensat(AT_FDCWD, (r + "/etc").c_str(), old, 0), 0);
    HostSnapshot(r, "", &before_);
    gofer::Options opts;
    opts.read_only = true;
    opts.memory_file = mf_.get();
    Mount(opts);
    upper_fs_ = tmpfs::Filesystem::Create(*mf_);
    auto o = OverlayFilesystem::Create(Options{root_vd_, upper_fs_});
    ASSERT_TRUE(o.ok()) << o.error().name();
    ovl_fs_ = std::move(o).value();
    ovl_ns_ = vfs::MountNamespace::Create(ovl_fs_, 0);
    ovl_ = Tree(ovl_ns_->Root());
  }
  void TearDown() override {
    ovl_ = Tree();
    ovl_ns_.reset();
    ovl_fs_.reset();
    std::map<std::string, std::string> after;
    HostSnapshot(tree_.root(), "", &after);
    EXPECT_EQ(after, before_) << "the host changed";
    gofer::GoferFsTest::TearDown();
  }

  std::unique_ptr<platform::MemoryFile> mf_;
  std::shared_ptr<tmpfs::Filesystem> upper_fs_;
  std::shared_ptr<OverlayFilesystem> ovl_fs_;
  std::shared_ptr<vfs::MountNamespace> ovl_ns_;
  Tree ovl_;
  std::map<std::string, std::string> before_;
};

TEST_F(GoferLowerTest, ChangesStayInTheSandbox) {
  EXPECT_EQ(ovl_.Read("/etc/os-release"), "ID=host\n");
  // New file under /etc.
  OVL_ASSERT_OK(ovl_.WriteFile("/etc/new.conf", "sandbox only"));
  EXPECT_EQ(ovl_.Read("/etc/new.conf"), "sandbox only");
  // Delete a host file inside.
  OVL_ASSERT_OK(ovl_.Unlink("/etc/os-release"));
  EXPECT_EQ(ovl_.StatErr("/etc/os-release"), kENOENT);
  EXPECT_EQ(ovl_.List("/etc"),
            (std::vector<std::string>{"cert", "new.conf", "passwd",
                                      "passwd.lnk", "ssl"}));
  // Append to a hard-linked host file: both names see it.
  OVL_ASSERT_OK(
      ovl_.WriteFile("/etc/passwd", "user:x:1000:1000\n", O_WRONLY | O_APPEND));
  EXPECT_EQ(ovl_.Read("/etc/passwd.lnk"), "root:x:0:0\nuser:x:1000:1000\n");
  // Attributes.
  OVL_ASSERT_OK(vfs::ChmodAt(ovl_.Base(), "/etc/ssl/cert", 0600, 0));
  OVL_ASSERT_OK(
      vfs::ChownAt(ovl_.Base(), "/etc/cert", 7, 7, AT_SYMLINK_NOFOLLOW));
  abi::Timespec t[2] = {{5, 0}, {6, 0}};
  OVL_ASSERT_OK(vfs::UtimensAt(ovl_.Base(), "/usr/lib/empty", t, 0));
  EXPECT_EQ(ovl_.Stat("/usr/lib/empty")->st_mtim.tv_sec, 6);
  EXPECT_EQ(ovl_.Stat("/usr/lib")->st_mode, S_IFDIR | 0751u);
  // Directories.
  OVL_ASSERT_OK(ovl_.Rmdir("/usr/lib/empty"));
  OVL_ASSERT_OK(ovl_.Mkdir("/usr/lib/empty"));
  OVL_ASSERT_OK(ovl_.Mkdir("/var"));
  OVL_ASSERT_OK(ovl_.Rename("/etc/ssl/cert", "/var/cert"));
  EXPECT_EQ(ovl_.Read("/var/cert"), "CERT");
  OVL_ASSERT_OK(ovl_.Rmdir("/etc/ssl"));
  EXPECT_EQ(ovl_.Read("/etc/cert"), "<ENOENT>");
  OVL_EXPECT_ERRNO(ovl_.Rename("/usr", "/usr2"), kEXDEV);
  OVL_ASSERT_OK(vfs::TruncateAt(ovl_.Base(), "/etc/passwd.lnk", 4));
  EXPECT_EQ(ovl_.Read("/etc/passwd"), "root");
}

TEST_F(GoferLowerTest, CopyUpReadsThroughTheHostFd) {
  // Names and attributes cached and the parents copied up first; then a
  // copy-up of 4 bytes and one of 3 MiB make the same Gofer calls (the data
  // never crosses the socket).
  ASSERT_TRUE(ovl_.Stat("/usr/lib/small").ok());
  ASSERT_TRUE(ovl_.Stat("/usr/lib/libc.so").ok());
  OVL_ASSERT_OK(ovl_.Mkdir("/usr/lib/new"));  // copies the parents up
  uint64_t calls = fs_->rpc_count();
  OVL_ASSERT_OK(vfs::ChmodAt(ovl_.Base(), "/usr/lib/small", 0640, 0));
  uint64_t small_calls = fs_->rpc_count() - calls;
  calls = fs_->rpc_count();
  auto f = ovl_.Open("/usr/lib/libc.so", O_RDWR);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(fs_->rpc_count() - calls, small_calls);
  EXPECT_LE(small_calls, 2u);  // listxattr, open
  auto st = ovl_.Stat("/usr/lib/libc.so");
  EXPECT_EQ(st->st_size, 3 << 20);
  struct stat hst;
  ASSERT_EQ(lstat(Host("usr/lib/libc.so").c_str(), &hst), 0);
  EXPECT_EQ(st->st_ino, hst.st_ino);  // the host's inode number, kept
  EXPECT_EQ(st->st_mtim.tv_nsec, hst.st_mtim.tv_nsec);
  vfs::IoContext ctx;
  ASSERT_TRUE((*f)->PWrite(ctx,
                           absl::MakeConstSpan(
                               reinterpret_cast<const uint8_t*>("xy"), 2),
                           (3 << 20) - 1)
                  .ok());
  std::string data = ovl_.Read("/usr/lib/libc.so");
  EXPECT_EQ(data.size(), (3u << 20) + 1);
  EXPECT_EQ(data.substr(data.size() - 3), "Lxy");
  EXPECT_EQ(data.find_first_not_of('L'), (3u << 20) - 1);
  // The merged /usr keeps the host's times after the copy-up linked
  // /usr/lib into it.
  struct stat dst;
  ASSERT_EQ(lstat(Host("usr").c_str(), &dst), 0);
  EXPECT_EQ(ovl_.Stat("/usr")->st_mtim.tv_nsec, dst.st_mtim.tv_nsec);
  EXPECT_EQ(ovl_.Stat("/usr")->st_mtim.tv_sec, dst.st_mtim.tv_sec);
}

TEST_F(GoferLowerTest, ListingsMergeHostAndSandboxNames) {
  for (int i = 0; i < 40; ++i) {
    OVL_ASSERT_OK(ovl_.WriteFile("/etc/f" + std::to_string(i), "x"));
  }
  OVL_ASSERT_OK(ovl_.Unlink("/etc/passwd.lnk"));
  std::vector<std::string> names = ovl_.List("/etc");
  EXPECT_EQ(names.size(), 44u);  // 5 host names - 1 + 40
  EXPECT_TRUE(std::find(names.begin(), names.end(), "passwd.lnk") ==
              names.end());
  // The read-only Gofer itself still refuses writes.
  OVL_EXPECT_ERRNO(vfs::MkdirAt(gofer::GoferFsTest::Base(), "/x", 0755, 0),
                   kEROFS);
}

}  // namespace
}  // namespace sandbox::fs::overlay
