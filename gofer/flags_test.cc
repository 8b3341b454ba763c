#include "gofer/flags.h"

#include "gtest/gtest.h"

namespace gofer {
namespace {

TEST(Flags, ParsesEverything) {
  auto c = ParseGoferFlags({"--root=/srv", "--serve=3", "--serve=4:data/x:ro",
                            "--bind=/vol:data:ro", "--bind=/b:c", "--root-ro",
                            "--userns"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->root, "/srv");
  ASSERT_EQ(c->mounts.size(), 2u);
  EXPECT_EQ(c->mounts[0].sock_fd, 3);
  EXPECT_EQ(c->mounts[0].path, "");
  EXPECT_FALSE(c->mounts[0].read_only);
  EXPECT_EQ(c->mounts[1].path, "data/x");
  EXPECT_TRUE(c->mounts[1].read_only);
  ASSERT_EQ(c->submounts.size(), 2u);
  EXPECT_EQ(c->submounts[0].source, "/vol");
  EXPECT_TRUE(c->submounts[0].read_only);
  EXPECT_FALSE(c->submounts[1].read_only);
  EXPECT_TRUE(c->root_read_only);
  EXPECT_TRUE(c->user_namespace);
  EXPECT_TRUE(c->confine);
  EXPECT_TRUE(c->seccomp);
}

TEST(Flags, ParsesVolumes) {
  auto c = ParseGoferFlags(
      {"--root=/", "--serve=3:ro", "--volume=4:/a:b", "--volume=5:/c:ro"});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->mounts.size(), 3u);
  EXPECT_EQ(c->mounts[0].volume, -1);
  EXPECT_EQ(c->mounts[1].sock_fd, 4);
  EXPECT_EQ(c->mounts[1].volume, 0);
  EXPECT_FALSE(c->mounts[1].read_only);
  EXPECT_EQ(c->mounts[2].volume, 1);
  EXPECT_TRUE(c->mounts[2].read_only);
  ASSERT_EQ(c->volumes.size(), 2u);
  EXPECT_EQ(c->volumes[0].source, "/a:b");
  EXPECT_FALSE(c->volumes[0].read_only);
  EXPECT_EQ(c->volumes[1].source, "/c");
  EXPECT_TRUE(c->volumes[1].read_only);
}

TEST(Flags, ParsesSuidInEitherOrder) {
  auto c = ParseGoferFlags({"--root=/", "--serve=3:ro", "--serve=4:d:suid",
                            "--volume=5:/a:ro:suid", "--volume=6:/b:suid:ro",
                            "--volume=7:/c"});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->mounts.size(), 5u);
  EXPECT_FALSE(c->mounts[0].suid);  // Nosuid unless asked.
  EXPECT_TRUE(c->mounts[1].suid);
  EXPECT_EQ(c->mounts[1].path, "d");
  EXPECT_FALSE(c->mounts[1].read_only);
  for (int i : {2, 3}) {
    EXPECT_TRUE(c->mounts[i].suid) << i;
    EXPECT_TRUE(c->mounts[i].read_only) << i;
  }
  EXPECT_EQ(c->volumes[0].source, "/a");
  EXPECT_EQ(c->volumes[1].source, "/b");
  EXPECT_FALSE(c->mounts[4].suid);
  EXPECT_EQ(c->volumes[2].source, "/c");
}

TEST(Flags, ParsesUdsInAnyOrder) {
  auto c = ParseGoferFlags({"--root=/", "--volume=5:/a:uds",
                            "--volume=6:/b:ro:uds:suid", "--volume=7:/c",
                            "--serve=8:d:uds"});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->mounts.size(), 4u);
  EXPECT_TRUE(c->mounts[0].host_sockets);
  EXPECT_EQ(c->volumes[0].source, "/a");
  EXPECT_TRUE(c->mounts[1].host_sockets);
  EXPECT_TRUE(c->mounts[1].read_only);
  EXPECT_TRUE(c->mounts[1].suid);
  EXPECT_EQ(c->volumes[1].source, "/b");
  EXPECT_FALSE(c->mounts[2].host_sockets);  // Only when asked.
  EXPECT_TRUE(c->mounts[3].host_sockets);
  EXPECT_EQ(c->mounts[3].path, "d");
}

TEST(Flags, RejectsBadInput) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"--serve=3"},                // No root.
           {"--root=rel", "--serve=3"},  // Relative root.
           {"--root=/r"},                // Nothing served.
           {"--root=/r", "--serve=-1"},
           {"--root=/r", "--serve=x"},
           {"--root=/r", "--serve=3:a:b"},
           {"--root=/r", "--serve=3", "--bind=/a"},
           {"--root=/r", "--serve=3", "--bind=:b"},
           {"--root=/r", "--volume=3"},
           {"--root=/r", "--volume=3:rel"},
           {"--root=/r", "--volume=x:/a"},
           {"--root=/r", "--serve=3", "--frobnicate"},
       }) {
    EXPECT_FALSE(ParseGoferFlags(args).ok()) << args.back();
  }
}

}  // namespace
}  // namespace gofer
