// End-to-end: execve inside the sandbox (shells running programs, pipes,
// exec replacing the shell) and dynamically linked host programs (PT_INTERP),
// through the real `runsc do`.
//
// The busybox cases need a statically linked /usr/bin/busybox on the host
// (the sandbox's root then holds it without the host's root). The dynamic
// cases need `runsc do` to serve the host's root file system (the Gofer):
// they check for it by looking for /etc/os-release in the sandbox, and skip
// with a message otherwise.
#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

// Whether `path` is an ELF file without PT_INTERP.
bool IsStaticElf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string b = ss.str();
  if (b.size() < sizeof(Elf64_Ehdr) || b.compare(0, 4, ELFMAG) != 0) {
    return false;
  }
  Elf64_Ehdr eh;
  memcpy(&eh, b.data(), sizeof(eh));
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (eh.e_phoff + (i + 1) * sizeof(ph) > b.size()) return false;
    memcpy(&ph, b.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == PT_INTERP) return false;
  }
  return true;
}

constexpr char kBusybox[] = "/usr/bin/busybox";

#define REQUIRE_STATIC_BUSYBOX()                                \
  do {                                                          \
    if (!IsStaticElf(kBusybox)) {                               \
      GTEST_SKIP() << "SKIP: no statically linked " << kBusybox \
                   << " on this host (package busybox-static)"; \
    }                                                           \
  } while (0)

std::string Diag(const Result& r) {
  return "status " + std::to_string(r.status) + "\nstdout:\n" + r.out +
         "\nstderr:\n" + r.err;
}

TEST(ExecE2eTest, ShellWritesThenCatsAFile) {
  REQUIRE_STATIC_BUSYBOX();
  Result r = RunscDo({kBusybox, "sh", "-c",
                      "echo hello > /tmp/x && cat /tmp/x && "
                      "/usr/bin/busybox cat /tmp/x"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  EXPECT_EQ(r.out, "hello\nhello\n") << Diag(r);
}

TEST(ExecE2eTest, ShellPipeline) {
  REQUIRE_STATIC_BUSYBOX();
  Result r = RunscDo(
      {kBusybox, "sh", "-c", "echo hi | /usr/bin/busybox cat | busybox wc -c"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  EXPECT_EQ(r.out, "3\n") << Diag(r);
}

TEST(ExecE2eTest, ExitStatusOfAnExecutedProgram) {
  REQUIRE_STATIC_BUSYBOX();
  Result r = RunscDo({kBusybox, "sh", "-c",
                      "/usr/bin/busybox false; echo $?; "
                      "/usr/bin/busybox sh -c 'exit 7'; echo $?"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  EXPECT_EQ(r.out, "1\n7\n") << Diag(r);
}

// exec replaces the shell: its status is the program's, and /proc/self/exe
// and the comm follow.
TEST(ExecE2eTest, ExecReplacesTheShell) {
  REQUIRE_STATIC_BUSYBOX();
  Result r = RunscDo({kBusybox, "sh", "-c",
                      "exec /usr/bin/busybox sh -c "
                      "'readlink /proc/self/exe; cat /proc/$$/comm; exit 3'"});
  EXPECT_EQ(r.status, 3) << Diag(r);
  EXPECT_EQ(r.out, std::string(kBusybox) + "\nbusybox\n") << Diag(r);
}

TEST(ExecE2eTest, MissingProgramIsReportedByTheShell) {
  REQUIRE_STATIC_BUSYBOX();
  Result r = RunscDo({kBusybox, "sh", "-c", "/no/such/program; echo $?"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  EXPECT_EQ(r.out, "127\n") << Diag(r);
}

// ---- Dynamically linked host programs (needs the host root). ----

bool HostRootServed() {
  static int served = -1;
  if (served < 0) {
    if (IsStaticElf(kBusybox)) {
      served = RunscDo({kBusybox, "test", "-e", "/etc/os-release"}).status == 0;
    } else {
      served = RunscDo({"/bin/true"}).status == 0;
    }
  }
  return served == 1;
}

#define REQUIRE_HOST_ROOT()                                                 \
  do {                                                                      \
    if (!HostRootServed()) {                                                \
      GTEST_SKIP() << "SKIP: runsc do does not serve the host's root file " \
                      "system here (needed for the shared libraries)";      \
    }                                                                       \
  } while (0)

TEST(ExecE2eTest, DynamicTrue) {
  REQUIRE_HOST_ROOT();
  Result r = RunscDo({"/bin/true"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  r = RunscDo({"/bin/false"});
  EXPECT_EQ(r.status, 1) << Diag(r);
}

TEST(ExecE2eTest, DynamicLs) {
  REQUIRE_HOST_ROOT();
  Result r = RunscDo({"/bin/ls", "/"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  EXPECT_NE(r.out.find("usr\n"), std::string::npos) << Diag(r);
  EXPECT_NE(r.out.find("etc\n"), std::string::npos) << Diag(r);
}

TEST(ExecE2eTest, DynamicShellPipeline) {
  REQUIRE_HOST_ROOT();
  Result r = RunscDo({"/bin/sh", "-c", "echo hi | cat"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  EXPECT_EQ(r.out, "hi\n") << Diag(r);
}

TEST(ExecE2eTest, Python) {
  REQUIRE_HOST_ROOT();
  if (access("/usr/bin/python3", X_OK) != 0) {
    GTEST_SKIP() << "SKIP: no /usr/bin/python3 on this host";
  }
  Result r = RunscDo({"/usr/bin/python3", "-c", "print(1)"});
  EXPECT_EQ(r.status, 0) << Diag(r);
  EXPECT_EQ(r.out, "1\n") << Diag(r);
}

}  // namespace
}  // namespace sandbox::e2e
