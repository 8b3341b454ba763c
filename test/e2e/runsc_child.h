// Shared by the end-to-end tests: the runfiles paths of runsc and the e2e
// programs, and a running `runsc` child with pipes to its stdin, stdout and
// stderr (one implementation for runsc_do_test and confine_test).
#ifndef TEST_E2E_RUNSC_CHILD_H_
#define TEST_E2E_RUNSC_CHILD_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sandbox::e2e {

// $TEST_SRCDIR/$TEST_WORKSPACE/rel.
std::string Runfile(const std::string& rel);
// //runsc-compat:runsc.
std::string Runsc();
// //test/e2e/programs:<name>.
std::string Program(const std::string& name);

struct Result {
  int status = -1;  // exit code, or 128+signal
  std::string out, err;
};

// `runsc ARGS...` (argv[0] "runsc") with stdin, stdout and stderr on pipes,
// and `extra_env` ("K=V") added to the environment. The destructor kills
// and reaps a child that Finish did not.
class Child {
 public:
  Child(const std::vector<std::string>& args,
        const std::vector<std::string>& extra_env = {});
  // Any program instead of runsc: argv[0] is its path.
  struct Native {};
  Child(Native, const std::vector<std::string>& argv);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Writes all of `s` to stdin (a gtest assertion on failure).
  void Write(const std::string& s);
  void CloseStdin();
  // Stops reading stdout (its pipe is closed: the writer gets EPIPE).
  void CloseStdout();
  // Reads stdout until `want` has appeared; false at EOF or after
  // `timeout_ms` without output (then the child is killed).
  bool WaitForOutput(const std::string& want, int timeout_ms = 20000);
  // Reads stdout and stderr to EOF (killing the child after `timeout_ms`
  // without output) and waits for its exit. stdin is left as it is: close
  // it first for a program that reads to EOF.
  Result Finish(int timeout_ms = 60000);

 private:
  // Reads what is available from stdout/stderr; false at EOF on both or
  // on timeout.
  bool Pump(int timeout_ms);

  // Forks and execs `exe` with `argv`, stdio on pipes.
  void Start(const std::string& exe, const std::vector<std::string>& argv,
             const std::vector<std::string>& extra_env);

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  bool out_open_ = true, err_open_ = true, reaped_ = false;
  Result res_;
};

// Runs `runsc ARGS...` with `input` on stdin (then closed) to its exit.
Result RunRunsc(const std::vector<std::string>& args,
                const std::string& input = "",
                const std::vector<std::string>& env = {});

// Runs `runsc do -- ARGS...` with stdin at EOF to its exit.
Result RunscDo(const std::vector<std::string>& args);

// Runs the program argv[0] (a path) natively with stdin at EOF to its exit.
Result RunNative(const std::vector<std::string>& argv);

// Why `runsc do` cannot start a sandbox on this host (it exits 125 naming
// the systrap platform), or "" when it can. Probed once per process with
// the host's /bin/true.
const std::string& SandboxUnavailableReason();

// A fixture whose cases skip, with the reason, where no sandbox can start.
class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!SandboxUnavailableReason().empty()) {
      GTEST_SKIP() << SandboxUnavailableReason();
    }
  }
};

}  // namespace sandbox::e2e

#endif  // TEST_E2E_RUNSC_CHILD_H_
