// Test fixture for kernel code with tasks that never run guest code: a
// kernel on the fake platform whose syscalls all fail with ENOSYS, and one
// process (`task_`) made but never started, so the test's own threads play
// the parts of the run loop.
#ifndef SENTRY_KERNEL_TESTING_H_
#define SENTRY_KERNEL_TESTING_H_

#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::kernel::testing {

class NoSyscalls : public SyscallDispatcher {
 public:
  KResult<uint64_t> Dispatch(Task&, uint64_t, const SyscallArgs&) override {
    return kENOSYS;
  }
};

class OneProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernel_ =
        std::make_unique<Kernel>(&platform_, dispatcher_, KernelOptions{});
    auto mm = mm::MemoryManager::Create(platform_, {.randomize = false});
    ASSERT_TRUE(mm.ok());
    NewProcessArgs args;
    args.mm = std::move(mm).value();
    auto t = kernel_->NewProcess(std::move(args));
    ASSERT_TRUE(t.ok());
    task_ = *t;
  }

  mm::testing::FakePlatform platform_;
  NoSyscalls dispatcher_;
  std::unique_ptr<Kernel> kernel_;
  Task* task_ = nullptr;
};

}  // namespace sandbox::kernel::testing

#endif  // SENTRY_KERNEL_TESTING_H_
