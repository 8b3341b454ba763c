#include "sentry/kernel/task_thread.h"

#include <system_error>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::kernel {

struct TaskThread::State {
  absl::Mutex mu;
  bool ready ABSL_GUARDED_BY(mu) = false;  // the thread reported
  bool ok ABSL_GUARDED_BY(mu) = false;     // ... with its wake-up eventfd
  bool go ABSL_GUARDED_BY(mu) = false;     // body set, or cancelled
  std::function<void()> body ABSL_GUARDED_BY(mu);  // empty: cancelled
};

namespace {

void Park(std::shared_ptr<TaskThread::State> st) {
  // The eventfd every blocking wait of this thread sleeps on: made now, so
  // that no wait of the task can find it missing.
  const bool ok = vfs::ThreadWakeFd() >= 0;
  std::function<void()> body;
  {
    absl::MutexLock l(&st->mu);
    st->ready = true;
    st->ok = ok;
    if (!ok) return;
    st->mu.Await(absl::Condition(&st->go));
    body = std::move(st->body);
    st->body = nullptr;
  }
  st.reset();
  if (body) body();
}

}  // namespace

KResult<std::unique_ptr<TaskThread>> TaskThread::Create() {
  auto st = std::make_shared<State>();
  try {
    std::thread(Park, st).detach();
  } catch (const std::system_error&) {
    return kEAGAIN;  // the host's clone failed (EAGAIN, ENOMEM)
  }
  absl::MutexLock l(&st->mu);
  st->mu.Await(absl::Condition(&st->ready));
  if (!st->ok) return kEAGAIN;  // no eventfd (EMFILE/ENFILE): the thread ended
  return std::unique_ptr<TaskThread>(new TaskThread(std::move(st)));
}

TaskThread::~TaskThread() {
  if (st_ == nullptr) return;
  absl::MutexLock l(&st_->mu);
  st_->go = true;  // no body: the parked thread ends
}

void TaskThread::Run(std::function<void()> body) {
  {
    absl::MutexLock l(&st_->mu);
    st_->body = std::move(body);
    st_->go = true;
  }
  st_.reset();
}

}  // namespace sandbox::kernel
