#include "sentry/base/result.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace sandbox {
namespace {

KResult<int> Half(int x) {
  if (x % 2 != 0) return kEINVAL;
  return x / 2;
}

KResult<int> Quarter(int x) {
  TRY(int h, Half(x));
  TRY(int q, Half(h));
  return q;
}

KResult<void> CheckPositive(int x) {
  if (x <= 0) return kERANGE;
  return OkResult();
}

KResult<int> PositiveQuarter(int x) {
  TRY_VOID(CheckPositive(x));
  return Quarter(x);
}

TEST(ResultTest, ValueAndError) {
  EXPECT_EQ(Quarter(8).value(), 2);
  ASSERT_FALSE(Quarter(6).ok());
  EXPECT_EQ(Quarter(6).error(), kEINVAL);
  EXPECT_EQ(PositiveQuarter(-4).error(), kERANGE);
  EXPECT_EQ(PositiveQuarter(4).value(), 1);
}

TEST(ResultTest, MoveOnlyValue) {
  auto make = []() -> KResult<std::unique_ptr<std::string>> {
    return std::make_unique<std::string>("x");
  };
  auto r = make();
  ASSERT_TRUE(r.ok());
  std::unique_ptr<std::string> s = std::move(r).value();
  EXPECT_EQ(*s, "x");
}

TEST(ErrnoTest, Names) {
  EXPECT_EQ(kENOENT.name(), "ENOENT");
  EXPECT_EQ(kENOENT.message(), "No such file or directory");
  EXPECT_EQ(Errno(kERESTARTSYS).name(), "ERESTARTSYS");
  EXPECT_TRUE(kERestartSys.IsRestart());
  EXPECT_FALSE(kEINTR.IsRestart());
  EXPECT_EQ(Errno(4095).name(), "E?");
}

}  // namespace
}  // namespace sandbox
