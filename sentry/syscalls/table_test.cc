// The rows of linux64.tbl.inc against abi's list of numbers.
#include "sentry/syscalls/table.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/abi/syscalls.h"

namespace sandbox::syscalls {
namespace {

TEST(Linux64TableTest, OneRowPerAbiNumberInNumberOrder) {
  std::vector<int> rows_of(abi::kMaxSyscall, 0);
  int previous = -1;
  for (const SyscallEntry& row : Linux64Rows()) {
    ASSERT_GE(row.nr, 0);
    ASSERT_LT(row.nr, abi::kMaxSyscall);
    EXPECT_GT(row.nr, previous) << row.name << ": not in number order";
    previous = row.nr;
    ++rows_of[row.nr];
    const char* abi_name = abi::SyscallName(row.nr);
    ASSERT_NE(abi_name, nullptr) << row.nr << ": not an x86-64 number";
    EXPECT_EQ(std::string(row.name), abi_name) << row.nr;
  }
  for (int nr = 0; nr < abi::kMaxSyscall; ++nr) {
    if (abi::SyscallName(nr) == nullptr) {
      EXPECT_EQ(rows_of[nr], 0) << nr;
    } else {
      EXPECT_EQ(rows_of[nr], 1) << nr << " " << abi::SyscallName(nr);
    }
  }
}

TEST(Linux64TableTest, RowsAreConsistent) {
  for (const SyscallEntry& row : Linux64Rows()) {
    if (!row.registered) {
      EXPECT_EQ(row.handler, nullptr) << row.name;
      continue;
    }
    switch (row.support) {
      case Support::kFull:
        EXPECT_NE(row.handler, nullptr) << row.name;
        EXPECT_STREQ(row.note, "") << row.name;
        break;
      case Support::kPartial:
        EXPECT_NE(row.handler, nullptr) << row.name;
        EXPECT_STRNE(row.note, "") << row.name << ": a partial row says what";
        break;
      case Support::kUnsupported:
        EXPECT_EQ(row.handler, nullptr) << row.name;
        EXPECT_STRNE(row.note, "")
            << row.name << ": an unsupported row says why";
        break;
    }
    if (row.handler != nullptr) {
      EXPECT_NE(row.handler->fn, nullptr) << row.name;
      EXPECT_NE(row.handler->format, nullptr) << row.name;
    }
  }
}

TEST(Linux64TableTest, TableHoldsTheRows) {
  auto table = SyscallTable::CreateLinux64();
  for (const SyscallEntry& row : Linux64Rows()) {
    const SyscallEntry* e = table->Lookup(row.nr);
    if (!row.registered) {
      EXPECT_EQ(e, nullptr) << row.name;
      continue;
    }
    ASSERT_NE(e, nullptr) << row.name;
    EXPECT_EQ(e->handler, row.handler) << row.name;
    EXPECT_EQ(e->support, row.support) << row.name;
    EXPECT_EQ(e->hex_result, row.hex_result) << row.name;
  }
  EXPECT_TRUE(table->Lookup(abi::nr::mmap)->hex_result);
  EXPECT_TRUE(table->Lookup(abi::nr::brk)->hex_result);
  EXPECT_FALSE(table->Lookup(abi::nr::read)->hex_result);
  EXPECT_EQ(table->Lookup(abi::nr::rseq)->error, kENOSYS);
}

}  // namespace
}  // namespace sandbox::syscalls
