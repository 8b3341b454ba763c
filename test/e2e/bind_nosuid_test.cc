// End-to-end: a writable `runsc do --bind` is nosuid and nodev on the host
// (issue 17, finding 2). The guest, root inside, tries to plant privileges
// in a fresh host directory (test/e2e/bind_nosuid_probe.c and busybox's
// chown/chmod/mv); the host then finds no set-id regular file, no device
// node, no security.capability, and only the caller's uid/gid as owners.
// With ":suid" the same chmod 4755 reaches the host (the old, unsafe
// behaviour, and proof that the checks can fail). The Gofer process keeps
// no CAP_FSETID (nor CAP_CHOWN without ":suid").
#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Child;
using ::sandbox::e2e::Result;
using ::sandbox::e2e::Runfile;
using ::sandbox::e2e::RunRunsc;

std::string Probe() { return Runfile("test/e2e/bind_nosuid_probe"); }
constexpr char kBusybox[] = "/usr/bin/busybox";

// A fresh host directory (not below /tmp: the sandbox's /tmp is its own).
class HostDir {
 public:
  HostDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string t = std::string(base ? base : "/var/tmp") + "/nosuidXXXXXX";
    path_ = mkdtemp(t.data());
    chmod(path_.c_str(), 0755);
  }
  ~HostDir() { (void)!system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Entry {
  std::string name;
  struct stat st;
};

// Every entry below dir (lstat), recursively.
std::vector<Entry> Walk(const std::string& dir) {
  std::vector<Entry> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    Entry en{dir + "/" + n, {}};
    if (lstat(en.name.c_str(), &en.st) != 0) continue;
    out.push_back(en);
    if (S_ISDIR(en.st.st_mode)) {
      for (Entry& c : Walk(en.name)) out.push_back(std::move(c));
    }
  }
  closedir(d);
  return out;
}

// The host's view after an attack: nothing a host user could use.
// At least `made` entries: the attack ran.
void ExpectNothingPlanted(const std::string& dir, size_t made) {
  std::vector<Entry> all = Walk(dir);
  EXPECT_GE(all.size(), made) << "the attack did not run to its end";
  for (const Entry& e : all) {
    const mode_t m = e.st.st_mode;
    SCOPED_TRACE(e.name);
    EXPECT_FALSE(S_ISCHR(m) || S_ISBLK(m)) << "a device node";
    if (S_ISDIR(m)) {
      EXPECT_EQ(m & S_ISUID, 0u) << std::oct << m;
    } else {
      EXPECT_EQ(m & (S_ISUID | S_ISGID), 0u) << std::oct << m;
    }
    EXPECT_EQ(e.st.st_uid, getuid());
    EXPECT_EQ(e.st.st_gid, getgid());
    if (S_ISREG(m)) {
      char buf[64];
      errno = 0;
      EXPECT_LT(
          lgetxattr(e.name.c_str(), "security.capability", buf, sizeof(buf)),
          0);
      EXPECT_NE(errno, 0);
      EXPECT_LT(lgetxattr(e.name.c_str(), "trusted.planted", buf, sizeof(buf)),
                0);
    }
  }
}

class BindNosuidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result r = RunRunsc({"do", "--", Probe(), "euid"});
    if (r.status == 125 && r.err.find("platform") != std::string::npos) {
      GTEST_SKIP() << "SKIP: the systrap platform cannot run here: " << r.err;
    }
    if (r.status != 0) {
      GTEST_SKIP() << "SKIP: runsc do with the host root cannot run here: "
                   << r.err;
    }
  }
  HostDir dir_;
};

TEST_F(BindNosuidTest, ProbeAttacksLeaveNoPrivilegeOnTheHost) {
  Result r = RunRunsc(
      {"do", "--bind=" + dir_.path(), "--", Probe(), "attack", dir_.path()});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  // copied, created, sgid, dir, fifo, renamed-tmp, renamed-overlay, hardlink
  ExpectNothingPlanted(dir_.path(), 8);
  // What the guest asked for arrived, without the set-id bits.
  struct stat st;
  ASSERT_EQ(stat((dir_.path() + "/copied").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(stat((dir_.path() + "/created").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  ASSERT_EQ(stat((dir_.path() + "/sgid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  // Directories keep S_ISGID, as on a Linux nosuid mount.
  ASSERT_EQ(stat((dir_.path() + "/dir").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 02755u);
  ASSERT_EQ(lstat((dir_.path() + "/fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_NE(lstat((dir_.path() + "/null").c_str(), &st), 0);
  ASSERT_EQ(stat((dir_.path() + "/renamed-tmp").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(stat((dir_.path() + "/renamed-overlay").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// The same with the tools an attacker would use: cp, chown, chmod, mv.
TEST_F(BindNosuidTest, ShellAttacksLeaveNoPrivilegeOnTheHost) {
  if (access(kBusybox, X_OK) != 0) GTEST_SKIP() << "SKIP: no " << kBusybox;
  const std::string& d = dir_.path();
  const std::string script =
      "cp " + std::string(kBusybox) + " " + d + "/sh && chown 0:0 " + d +
      "/sh && chmod 4755 " + d + "/sh && chmod u+s " + d + "/sh && chmod g+s " +
      d + "/sh && cp -p " + d + "/sh /tmp/root-sh && chmod 6755 /tmp/root-sh" +
      " && mv /tmp/root-sh " + d + "/moved && mkdir " + d + "/sub && chmod " +
      "6777 " + d + "/sub && touch " + d + "/sub/f && chmod 4777 " + d +
      "/sub/f && ls -ln " + d + "; mknod " + d + "/null c 1 3 && echo MKNOD; " +
      "chown 1000:1000 " + d + "/moved && echo CHOWN; true";
  Result r =
      RunRunsc({"do", "--bind=" + d, "--", kBusybox, "sh", "-c", script});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("MKNOD"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("CHOWN"), std::string::npos) << r.out;
  // The guest sees what the host has: no set-id file in the listing.
  EXPECT_NE(r.out.find("-rwxr-xr-x"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-rws"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-rwxr-s"), std::string::npos) << r.out;
  ExpectNothingPlanted(d, 4);  // sh, moved, sub, sub/f
  struct stat st;
  ASSERT_EQ(stat((d + "/moved").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// A set-id file the host already has in the bind: the guest's writes and
// truncations (the Sentry's donated descriptors, the Gofer's SetAttr; both
// without CAP_FSETID) clear its bits, as a write by any user does on Linux.
TEST_F(BindNosuidTest, WritesToAHostSetuidFileClearItsBits) {
  if (access(kBusybox, X_OK) != 0) GTEST_SKIP() << "SKIP: no " << kBusybox;
  const std::string& d = dir_.path();
  for (const char* name : {"appended", "truncated"}) {
    std::string p = d + "/" + name;
    FILE* f = fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    ASSERT_EQ(chmod(p.c_str(), 06755), 0);
  }
  Result r = RunRunsc(
      {"do", "--bind=" + d, "--", kBusybox, "sh", "-c",
       "echo 'id' >> " + d + "/appended && truncate -s 0 " + d + "/truncated"});
  EXPECT_EQ(r.status, 0) << r.err;
  ExpectNothingPlanted(d, 2);
}

// ":suid" restores the old behaviour: chown 0:0 && chmod 4755 reach the
// host. (The checks above fail on this tree.)
TEST_F(BindNosuidTest, SuidOptionLetsSetIdBitsThrough) {
  Result r = RunRunsc({"do", "--bind=" + dir_.path() + ":suid", "--", Probe(),
                       "suid", dir_.path()});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  struct stat st;
  ASSERT_EQ(stat((dir_.path() + "/planted").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u);
  EXPECT_EQ(st.st_uid, 0u);
}

// Inside, the bind is mounted nosuid,nodev (unless ":suid"), and exec of a
// setuid-root file by another user does not raise its privileges either
// way (the Sentry ignores set-id bits on every mount).
TEST_F(BindNosuidTest, InsideTheBindIsNosuidAndExecGivesNoPrivilege) {
  // At /tmp/b (the sandbox's tmpfs), which uid 65534 can reach.
  const std::string bind = "--bind=" + dir_.path() + ":/tmp/b";
  Result r = RunRunsc({"do", bind, "--", Probe(), "mount", "/tmp/b"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("mount "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nosuid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nodev"), std::string::npos) << r.out;
  r = RunRunsc({"do", bind + ":suid", "--", Probe(), "mount", "/tmp/b"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("mount "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nosuid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nodev"), std::string::npos) << r.out;
  r = RunRunsc({"do", bind + ":suid", "--", Probe(), "exec", "/tmp/b"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("euid 65534"), std::string::npos) << r.out;
  struct stat st;
  ASSERT_EQ(stat((dir_.path() + "/x").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u);  // The bit is there; exec ignored it.
}

// The Gofer of a running sandbox: no CAP_FSETID; CAP_CHOWN only for
// ":suid".
uint64_t GoferCapEff(pid_t runsc) {
  // The Gofer is runsc's child whose argv[0] is "runsc-gofer".
  for (int tries = 0; tries < 100; ++tries) {
    DIR* d = opendir("/proc");
    while (dirent* e = readdir(d)) {
      pid_t pid = atoi(e->d_name);
      if (pid <= 0) continue;
      std::string base = "/proc/" + std::to_string(pid);
      std::ifstream cmd(base + "/cmdline");
      std::string argv0;
      std::getline(cmd, argv0, '\0');
      if (argv0 != "runsc-gofer") continue;
      std::ifstream status(base + "/status");
      std::string line;
      uint64_t cap = 0;
      pid_t ppid = -1;
      while (std::getline(status, line)) {
        if (line.rfind("PPid:", 0) == 0) ppid = atoi(line.c_str() + 5);
        if (line.rfind("CapEff:", 0) == 0) {
          cap = std::stoull(line.substr(7), nullptr, 16);
        }
      }
      if (ppid == runsc) {
        closedir(d);
        return cap;
      }
    }
    closedir(d);
    usleep(20000);
  }
  ADD_FAILURE() << "no Gofer found for runsc " << runsc;
  return ~uint64_t{0};
}

TEST_F(BindNosuidTest, GoferKeepsNoFsetid) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: not root: the Gofer has no caps";
  for (bool suid : {false, true}) {
    Child c({"do", "--bind=" + dir_.path() + (suid ? ":suid" : ""), "--",
             Probe(), "wait"});
    ASSERT_TRUE(c.WaitForOutput("ready"));
    uint64_t eff = GoferCapEff(c.pid());
    EXPECT_EQ(eff & (uint64_t{1} << CAP_FSETID), 0u) << std::hex << eff;
    EXPECT_EQ((eff >> CAP_CHOWN) & 1, suid ? 1u : 0u) << std::hex << eff;
    EXPECT_NE(eff & (uint64_t{1} << CAP_DAC_OVERRIDE), 0u) << std::hex << eff;
    c.CloseStdin();
    Result r = c.Finish();
    EXPECT_EQ(r.status, 0) << r.err;
  }
}

}  // namespace
