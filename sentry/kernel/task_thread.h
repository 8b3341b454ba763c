// TaskThread: the host thread of a task, made before the task exists.
//
// clone(2) must fail with an errno, and change nothing, when the host
// cannot give the Sentry one more thread (EAGAIN from the host's clone:
// RLIMIT_NPROC, pid_max, memory) or that thread's wake-up eventfd (EMFILE).
// Making the thread first, parked, and handing it the task only once the
// task is complete moves every such failure before the point of no return.
//
// Thread safety: Create and Run are called by the creating thread; the
// parked thread shares only State (under its mutex).
#ifndef SENTRY_KERNEL_TASK_THREAD_H_
#define SENTRY_KERNEL_TASK_THREAD_H_

#include <functional>
#include <memory>

#include "sentry/base/result.h"

namespace sandbox::kernel {

class TaskThread {
 public:
  // A parked host thread that owns its wake-up eventfd
  // (vfs::ThreadWakeFd). EAGAIN if the host refused either.
  static KResult<std::unique_ptr<TaskThread>> Create();
  // If Run was not called, the parked thread ends.
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Runs `body` on the parked thread (detached: it ends when `body`
  // returns). Call at most once.
  void Run(std::function<void()> body);

  struct State;

 private:
  explicit TaskThread(std::shared_ptr<State> st) : st_(std::move(st)) {}
  std::shared_ptr<State> st_;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_TASK_THREAD_H_
