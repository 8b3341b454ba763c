#include "test/e2e/runsc_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace sandbox::e2e {

std::string Runfile(const std::string& rel) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "sandbox") +
         "/" + rel;
}

std::string Runsc() { return Runfile("runsc-compat/runsc"); }

std::string Program(const std::string& name) {
  return Runfile("test/e2e/programs/" + name);
}

Child::Child(const std::vector<std::string>& args,
             const std::vector<std::string>& extra_env) {
  std::vector<std::string> argv = {"runsc"};
  argv.insert(argv.end(), args.begin(), args.end());
  Start(Runsc(), argv, extra_env);
}

Child::Child(Native, const std::vector<std::string>& argv) {
  Start(argv.at(0), argv, {});
}

void Child::Start(const std::string& exe, const std::vector<std::string>& args,
                  const std::vector<std::string>& extra_env) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    abort();
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (const auto& e : extra_env) putenv(strdup(e.c_str()));
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(111);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (in_ >= 0) close(in_);
  close(out_);
  close(err_);
}

void Child::Write(const std::string& s) {
  ASSERT_EQ(write(in_, s.data(), s.size()), static_cast<ssize_t>(s.size()));
}

void Child::CloseStdout() {
  close(out_);
  out_ = open("/dev/null", O_RDONLY | O_CLOEXEC);  // Keeps Pump simple.
  out_open_ = false;
}

void Child::CloseStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

bool Child::WaitForOutput(const std::string& want, int timeout_ms) {
  while (res_.out.find(want) == std::string::npos) {
    if (!Pump(timeout_ms)) return false;
  }
  return true;
}

Result Child::Finish(int timeout_ms) {
  while (Pump(timeout_ms)) {
  }
  int ws = 0;
  waitpid(pid_, &ws, 0);
  reaped_ = true;
  res_.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return res_;
}

bool Child::Pump(int timeout_ms) {
  pollfd p[2] = {{out_open_ ? out_ : -1, POLLIN, 0},
                 {err_open_ ? err_ : -1, POLLIN, 0}};
  if (!out_open_ && !err_open_) return false;
  int n = poll(p, 2, timeout_ms);
  if (n <= 0) {
    kill(pid_, SIGKILL);
    ADD_FAILURE() << "timed out; output so far: " << res_.out
                  << "\nstderr: " << res_.err;
    return false;
  }
  char buf[4096];
  if (p[0].revents) {
    ssize_t r = read(out_, buf, sizeof(buf));
    if (r <= 0)
      out_open_ = false;
    else
      res_.out.append(buf, r);
  }
  if (p[1].revents) {
    ssize_t r = read(err_, buf, sizeof(buf));
    if (r <= 0)
      err_open_ = false;
    else
      res_.err.append(buf, r);
  }
  return true;
}

Result RunRunsc(const std::vector<std::string>& args, const std::string& input,
                const std::vector<std::string>& env) {
  Child c(args, env);
  if (!input.empty()) c.Write(input);
  c.CloseStdin();
  return c.Finish();
}

Result RunscDo(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"do", "--"};
  all.insert(all.end(), args.begin(), args.end());
  return RunRunsc(all);
}

Result RunNative(const std::vector<std::string>& argv) {
  Child c(Child::Native{}, argv);
  c.CloseStdin();
  return c.Finish();
}

const std::string& SandboxUnavailableReason() {
  static const std::string* const reason = [] {
    Result r = RunscDo({"/bin/true"});
    if (r.status == 125 && r.err.find("platform") != std::string::npos) {
      return new std::string("the systrap platform cannot run here: " + r.err);
    }
    return new std::string();
  }();
  return *reason;
}

}  // namespace sandbox::e2e
