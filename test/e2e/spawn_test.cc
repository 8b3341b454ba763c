// End-to-end: programs that start others through vfork and posix_spawn
// (dash/bash pipelines and command substitution, python's subprocess and
// os.posix_spawn) print in `runsc do` what they print natively.
//
// They need `runsc do` to serve the host's root file system (the Gofer) and
// the host's /bin/sh and /usr/bin/python3; a case skips with a message
// otherwise.
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

Result InSandbox(const std::vector<std::string>& args) { return RunscDo(args); }

std::string Diag(const Result& native, const Result& sandboxed) {
  return "native: status " + std::to_string(native.status) + "\n" + native.out +
         "sandbox: status " + std::to_string(sandboxed.status) + "\nstdout:\n" +
         sandboxed.out + "\nstderr:\n" + sandboxed.err;
}

bool HostRootServed() {
  static int served = -1;
  if (served < 0) served = InSandbox({"/bin/true"}).status == 0;
  return served == 1;
}

// Runs `args` natively and in the sandbox; both must exit 0 with the same
// stdout. `missing_syscall` (e.g. "syscall 7 (poll)"): a syscall another
// part of the Sentry does not have yet; if the sandbox run reports it as
// unimplemented the case skips, naming it (and checks again once it
// exists).
void ExpectSameOutput(const std::vector<std::string>& args,
                      const std::string& missing_syscall = "") {
  if (access(args[0].c_str(), X_OK) != 0) {
    GTEST_SKIP() << "SKIP: no " << args[0] << " on this host";
  }
  if (!HostRootServed()) {
    GTEST_SKIP() << "SKIP: runsc do does not serve the host's root file "
                    "system here (needed for the host's programs)";
  }
  Result native = RunNative(args);
  ASSERT_EQ(native.status, 0) << native.err;
  Result sandboxed = InSandbox(args);
  if (!missing_syscall.empty() &&
      sandboxed.err.find("unimplemented " + missing_syscall) !=
          std::string::npos) {
    GTEST_SKIP() << "SKIP: the Sentry has no " << missing_syscall << " yet:\n"
                 << sandboxed.err;
  }
  EXPECT_EQ(sandboxed.status, native.status) << Diag(native, sandboxed);
  EXPECT_EQ(sandboxed.out, native.out) << Diag(native, sandboxed);
}

TEST(SpawnE2eTest, ShellPipelines) {
  // dash forks (vfork for simple commands in newer versions) each stage.
  ExpectSameOutput({"/bin/sh", "-c", "echo a | tr a b; ls / | wc -l"});
}

TEST(SpawnE2eTest, ShellSubstitutionAndStatus) {
  ExpectSameOutput({"/bin/sh", "-c",
                    "x=$(echo hi | tr h H); echo $x; sh -c 'exit 3'; "
                    "echo $?; (exit 4); echo $?"});
}

TEST(SpawnE2eTest, PythonSubprocess) {
  // subprocess.run uses posix_spawn (clone(CLONE_VM|CLONE_VFORK)) or
  // vfork in _posixsubprocess. One pipe: communicate() just reads it.
  ExpectSameOutput({"/usr/bin/python3", "-c",
                    "import subprocess; print(subprocess.run([\"echo\","
                    "\"hi\"],stdout=subprocess.PIPE).stdout)"});
}

TEST(SpawnE2eTest, PythonSubprocessCaptureOutput) {
  // Two pipes: communicate() waits on both with a selector (poll(2)); with
  // input, on three (stdin's write end too), and more than a pipe's worth
  // of output on each needs the waits to alternate.
  ExpectSameOutput(
      {"/usr/bin/python3", "-c",
       "import subprocess\n"
       "print(subprocess.run([\"echo\",\"hi\"],capture_output=True).stdout)\n"
       "r = subprocess.run(['/bin/sh', '-c', 'cat; echo err >&2; "
       "head -c 200000 /dev/zero | tr \\\\0 a; head -c 100000 /dev/zero >&2'],"
       " input=b'x' * 150000, capture_output=True)\n"
       "print(r.returncode, len(r.stdout), r.stdout.count(b'x'),"
       " len(r.stderr), r.stderr[:4])\n"});
}

TEST(SpawnE2eTest, PythonPosixSpawnAndWait) {
  ExpectSameOutput(
      {"/usr/bin/python3", "-c",
       "import os\n"
       "pid = os.posix_spawn('/bin/sh', ['sh', '-c', 'exit 5'], os.environ)\n"
       "print(os.waitpid(pid, 0)[1] >> 8)\n"
       "r = os.popen('echo popen').read()\n"
       "print(r.strip())\n"
       "import subprocess\n"
       "print(subprocess.call(['/bin/sh', '-c', 'exit 2']))\n"});
}

}  // namespace
}  // namespace sandbox::e2e
