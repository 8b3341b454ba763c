#include "platform/host_fds.h"

#include <sys/resource.h>

#include <vector>

#include "gtest/gtest.h"

namespace sandbox::platform {
namespace {

TEST(HostFdBudgetTest, TakesUpToTheLimitThenRefusesUntilGivenBack) {
  HostFdBudget::Configure(1024);
  const size_t lim = HostFdBudget::limit();
  EXPECT_LT(lim + HostFdBudget::FileCacheFds() + kUncountedHostFds, 1025u);
  EXPECT_GT(lim, 512u);
  std::vector<HostFdHold> holds;
  for (;;) {
    HostFdHold h = HostFdHold::Take(6);
    if (!h.ok()) break;
    holds.push_back(std::move(h));
  }
  EXPECT_EQ(holds.size(), lim / 6);
  EXPECT_LE(HostFdBudget::used(), lim);
  EXPECT_FALSE(HostFdHold::Take(6).ok());
  EXPECT_EQ(HostFdBudget::used(), holds.size() * 6);  // a refusal takes none
  holds.pop_back();
  EXPECT_TRUE(HostFdHold::Take(6).ok());
  holds.clear();
  EXPECT_EQ(HostFdBudget::used(), 0u);
}

TEST(HostFdBudgetTest, MovedHoldGivesBackOnce) {
  HostFdBudget::Configure(1024);
  {
    HostFdHold a = HostFdHold::Take(4);
    ASSERT_TRUE(a.ok());
    HostFdHold b = std::move(a);
    EXPECT_EQ(HostFdBudget::used(), 4u);
    a = std::move(b);
    EXPECT_EQ(HostFdBudget::used(), 4u);
  }
  EXPECT_EQ(HostFdBudget::used(), 0u);
}

TEST(HostFdBudgetTest, RaisesTheSoftLimitToTheHardLimit) {
  struct rlimit r;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
  struct rlimit low = r;
  low.rlim_cur = std::min<rlim_t>(r.rlim_max, 256);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  const size_t now = HostFdBudget::RaiseAndConfigure();
  struct rlimit after;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, r.rlim_max);
  if (r.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(now, r.rlim_max);
  }
  EXPECT_LT(HostFdBudget::limit(), now);
  setrlimit(RLIMIT_NOFILE, &r);
}

}  // namespace
}  // namespace sandbox::platform
