#include "sentry/vfs/filesystem_type.h"

#include <memory>

#include "gtest/gtest.h"

namespace sandbox::vfs {
namespace {

class DiskType final : public FilesystemType {
 public:
  std::string_view name() const override { return "ext4"; }
  bool requires_device() const override { return true; }
};

TEST(FilesystemTypeRegistryTest, LookupAndListInRegistrationOrder) {
  FilesystemTypeRegistry r;
  ASSERT_TRUE(r.Register(std::make_unique<ListedFilesystemType>("sysfs")).ok());
  ASSERT_TRUE(r.Register(std::make_unique<DiskType>()).ok());
  ASSERT_TRUE(r.Register(std::make_unique<ListedFilesystemType>("9p")).ok());
  EXPECT_EQ(r.FilesystemsText(), "nodev\tsysfs\n\text4\nnodev\t9p\n");
  const FilesystemType* t = r.Lookup("9p");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name(), "9p");
  EXPECT_FALSE(t->user_mountable());
  EXPECT_EQ(r.Lookup("tmpfs"), nullptr);
  EXPECT_EQ(r.Lookup(""), nullptr);
}

TEST(FilesystemTypeRegistryTest, NameRegisteredTwiceIsEbusy) {
  FilesystemTypeRegistry r;
  ASSERT_TRUE(r.Register(std::make_unique<ListedFilesystemType>("proc")).ok());
  KResult<void> again =
      r.Register(std::make_unique<ListedFilesystemType>("proc"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), kEBUSY);
  EXPECT_EQ(r.FilesystemsText(), "nodev\tproc\n");
}

TEST(ParseGenericOptionsTest, GenericFlagsOnly) {
  EXPECT_EQ(ParseGenericOptions("").value(), false);
  EXPECT_EQ(ParseGenericOptions("ro").value(), true);
  EXPECT_EQ(ParseGenericOptions("ro,rw").value(), false);
  EXPECT_EQ(ParseGenericOptions("rw,,sync,silent,nomand,ro").value(), true);
  EXPECT_EQ(ParseGenericOptions("size=1").error(), kEINVAL);
  EXPECT_EQ(ParseGenericOptions("ro=1").error(), kEINVAL);
  EXPECT_EQ(ParseGenericOptions("bogus").error(), kEINVAL);
}

TEST(ParseSbFlagTest, MatchesByKey) {
  bool ro = false;
  EXPECT_TRUE(ParseSbFlag("ro", &ro));
  EXPECT_TRUE(ro);
  EXPECT_TRUE(ParseSbFlag("lazytime", &ro));
  EXPECT_TRUE(ro);
  EXPECT_TRUE(ParseSbFlag("rw", &ro));
  EXPECT_FALSE(ro);
  EXPECT_FALSE(ParseSbFlag("mode", &ro));
}

}  // namespace
}  // namespace sandbox::vfs
