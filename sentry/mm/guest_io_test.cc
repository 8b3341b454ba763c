// CopyInCString (guest_io.h) against MemoryManager::CopyInString's rules
// (Linux getname): the NUL within max_len bytes, EFAULT before it,
// ENAMETOOLONG without it; every answer is also CopyInString's.
#include "sentry/mm/guest_io.h"

#include <sys/mman.h>

#include <string>

#include "gtest/gtest.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::mm {
namespace {

constexpr uintptr_t kBase = 0x200000000;

class CopyInCStringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mm = MemoryManager::Create(platform_, {.randomize = false});
    ASSERT_TRUE(mm.ok());
    mm_ = std::move(mm).value();
  }
  void Map(uintptr_t addr, size_t len) {
    auto r = mm_->Mmap({.addr = addr,
                        .length = len,
                        .prot = PROT_READ | PROT_WRITE,
                        .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED});
    ASSERT_TRUE(r.ok());
  }
  void Put(uintptr_t addr, const void* p, size_t n) {
    auto r = mm_->CopyOut(addr, p, n);
    ASSERT_TRUE(r.ok() && *r == n);
  }
  // The string, or the errno's name.
  std::string Get(uintptr_t addr, size_t max_len) {
    std::string buf(max_len, '\xff');
    auto r = CopyInCString(*mm_, addr, buf.data(), max_len);
    auto s = mm_->CopyInString(addr, max_len);
    // The same answer as the std::string version.
    EXPECT_EQ(r.ok(), s.ok()) << addr;
    if (!r.ok()) {
      if (!s.ok()) EXPECT_EQ(r.error(), s.error());
      return std::string(r.error().name());
    }
    std::string got(buf.data(), *r);
    if (s.ok()) EXPECT_EQ(got, *s);
    return got;
  }

  testing::FakePlatform platform_;
  std::unique_ptr<MemoryManager> mm_;
};

TEST_F(CopyInCStringTest, LikeGetname) {
  Map(kBase, 2 * 4096);
  const char path[] = "/bin/true";
  Put(kBase + 5, path, sizeof(path));
  EXPECT_EQ(Get(kBase + 5, 4096), "/bin/true");
  EXPECT_EQ(Get(kBase + 5, 10), "/bin/true");
  EXPECT_EQ(Get(kBase + 5, 9), "ENAMETOOLONG");
  EXPECT_EQ(Get(kBase + 4096, 4096), "");
  // Ends with its NUL on the last mapped byte: fine.
  const uintptr_t last = kBase + 2 * 4096 - 4;
  Put(last, "abc", 4);
  EXPECT_EQ(Get(last, 4096), "abc");
  // No NUL before the end of the mapping: EFAULT; within max_len: too long.
  Put(last, "abcd", 4);
  EXPECT_EQ(Get(last, 4096), "EFAULT");
  EXPECT_EQ(Get(last, 4), "ENAMETOOLONG");
  EXPECT_EQ(Get(0, 4096), "EFAULT");
  EXPECT_EQ(Get(kBase + 3 * 4096, 4096), "EFAULT");
}

TEST_F(CopyInCStringTest, LongStringsAcrossPagesAndPieces) {
  Map(kBase, 4 * 4096);
  for (size_t len : {0, 1, 255, 256, 257, 511, 4000, 4095, 4096, 5000}) {
    std::string s(len, 'q');
    for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>('a' + i % 26);
    const uintptr_t at = kBase + 4096 - 100;  // crosses a page boundary
    Put(at, s.c_str(), s.size() + 1);
    EXPECT_EQ(Get(at, 8000), s) << len;
    if (len < 4096) {
      EXPECT_EQ(Get(at, 4096), s) << len;
    } else {
      EXPECT_EQ(Get(at, 4096), "ENAMETOOLONG") << len;
    }
  }
}

}  // namespace
}  // namespace sandbox::mm
