// Randomized: the overlay (random lower tree + empty upper) against a plain
// tmpfs holding the same starting tree, under the same random sequence of
// create/write/truncate/unlink/mkdir/rmdir/rename/link/chmod operations on a
// few colliding names. Every operation must give the same result (the
// overlay may also refuse to rename a directory that has a lower layer:
// EXDEV, as Linux without redirect_dir), and the full trees (names, types,
// modes, sizes, contents, listings) must match after each step. The lower
// tree must not change.
#include <fcntl.h>
#include <sys/stat.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/overlay/testing.h"

namespace sandbox::fs::overlay {
namespace {

class RandomOpsTest : public OverlayTest,
                      public ::testing::WithParamInterface<int> {
 protected:
  // path -> "type mode size [data]" for the whole tree.
  static void Snapshot(const Tree& t, const std::string& dir,
                       std::map<std::string, std::string>* out) {
    for (const std::string& name : t.List(dir)) {
      std::string p = dir == "/" ? "/" + name : dir + "/" + name;
      auto st = t.Stat(p, AT_SYMLINK_NOFOLLOW);
      if (!st.ok()) {
        (*out)[p] = std::string("stat ") + std::string(st.error().name());
        continue;
      }
      std::string v = std::to_string(st->st_mode);
      if (!S_ISDIR(st->st_mode)) v += " " + std::to_string(st->st_size);
      if (S_ISREG(st->st_mode)) {
        std::string d = t.Read(p);
        v += " " + d.substr(0, 8) + "#" +
             std::to_string(std::hash<std::string>()(d) % 100000);
      }
      (*out)[p] = v;
      if (S_ISDIR(st->st_mode)) Snapshot(t, p, out);
    }
  }
  static std::string Diff(const std::map<std::string, std::string>& a,
                          const std::map<std::string, std::string>& b) {
    std::string out;
    for (const auto& [k, v] : a) {
      auto it = b.find(k);
      if (it == b.end()) {
        out += "  only overlay: " + k + " " + v + "\n";
      } else if (it->second != v) {
        out += "  " + k + ": overlay " + v + " model " + it->second + "\n";
      }
    }
    for (const auto& [k, v] : b) {
      if (!a.contains(k)) out += "  only model: " + k + " " + v + "\n";
    }
    return out;
  }
  static std::map<std::string, std::string> Snap(const Tree& t) {
    std::map<std::string, std::string> m;
    Snapshot(t, "/", &m);
    return m;
  }

  std::string Path(std::mt19937& rng) {
    static const char* kDirs[] = {"", "/d0", "/d1", "/d0/d2", "/d1/d0"};
    static const char* kNames[] = {"f0", "f1", "f2", "d0", "d1", "d2"};
    std::string p = kDirs[rng() % 5];
    return p + "/" + kNames[rng() % 6];
  }

  // Builds the same random tree in both.
  void Populate(std::mt19937& rng, const std::vector<Tree*>& trees) {
    for (const char* d : {"/d0", "/d1", "/d0/d2", "/d1/d0"}) {
      for (Tree* t : trees) (void)t->Mkdir(d, 0755);
    }
    for (int i = 0; i < 40; ++i) {
      std::string p = Path(rng);
      bool dir = rng() % 3 == 0;
      std::string data(rng() % 3000, static_cast<char>('a' + rng() % 26));
      for (Tree* t : trees) {
        if (dir) {
          (void)t->Mkdir(p, 0755);
        } else {
          (void)t->WriteFile(p, data, O_CREAT | O_EXCL | O_WRONLY, 0640);
        }
      }
    }
  }
};

// Runs `op` on both trees; their results must agree.
#define BOTH(op)                                             \
  do {                                                       \
    auto _a = [&](Tree& t) { return (op); };                 \
    auto ro = _a(ovl_);                                      \
    auto rm = _a(model_);                                    \
    ASSERT_EQ(ro.ok(), rm.ok())                              \
        << step << ": " #op << " overlay "                   \
        << (ro.ok() ? "ok" : ro.error().name()) << " model " \
        << (rm.ok() ? "ok" : rm.error().name());             \
    if (!ro.ok()) {                                          \
      ASSERT_EQ(ro.error(), rm.error()) << step << ": " #op; \
    } else {                                                 \
      ++succeeded;                                           \
    }                                                        \
  } while (0)

TEST_P(RandomOpsTest, MatchesPlainTmpfs) {
  std::mt19937 rng(GetParam());
  auto model_fs = tmpfs::Filesystem::Create(*mf_, {.root_mode = 0755});
  auto model_ns = vfs::MountNamespace::Create(model_fs, 0);
  Tree model_(model_ns->Root());
  Populate(rng, {&lower_, &model_});
  auto lower_before = Snap(lower_);
  MountOverlay();
  ASSERT_EQ(Snap(ovl_), Snap(model_));
  int exdev = 0, succeeded = 0;
  std::string log;
  for (int step = 0; step < 400; ++step) {
    std::string a = Path(rng), b = Path(rng);
    std::string data(rng() % 5000, static_cast<char>('A' + rng() % 26));
    int op = rng() % 11;
    uint64_t r = rng();  // one draw for both trees
    log += "op " + std::to_string(op) + " ";
    switch (op) {
      case 0:
        BOTH(t.WriteFile(a, data, O_CREAT | O_EXCL | O_WRONLY));
        break;
      case 1:
        BOTH(t.WriteFile(a, data, O_WRONLY | O_APPEND));
        break;
      case 2:
        BOTH(t.WriteFile(a, data, O_WRONLY | O_TRUNC));
        break;
      case 3:
        BOTH(vfs::TruncateAt(t.Base(), a, r % 4000));
        break;
      case 4:
        BOTH(t.Unlink(a));
        break;
      case 5:
        BOTH(t.Mkdir(a, 0700 + (r % 2) * 050));
        break;
      case 6:
        BOTH(t.Rmdir(a));
        break;
      case 7: {
        auto ro = ovl_.Rename(a, b);
        if (!ro.ok() && ro.error() == kEXDEV) {
          ASSERT_TRUE(S_ISDIR(ovl_.Stat(a, AT_SYMLINK_NOFOLLOW)->st_mode));
          ++exdev;
          break;
        }
        auto rm = model_.Rename(a, b);
        ASSERT_EQ(ro.ok(), rm.ok())
            << step << ": rename " << a << " " << b << " overlay "
            << (ro.ok() ? "ok" : ro.error().name()) << " model "
            << (rm.ok() ? "ok" : rm.error().name());
        if (!ro.ok()) {
          ASSERT_EQ(ro.error(), rm.error()) << step;
        }
        break;
      }
      case 8:
        BOTH(t.Link(a, b));
        break;
      case 9:
        BOTH(vfs::ChmodAt(t.Base(), a, 0600 + (r % 8) * 010, 0));
        break;
      case 10: {
        // Partial write in the middle through pwrite.
        auto fo = ovl_.Open(a, O_RDWR);
        auto fm = model_.Open(a, O_RDWR);
        ASSERT_EQ(fo.ok(), fm.ok()) << step << ": open " << a;
        if (!fo.ok()) {
          ASSERT_EQ(fo.error(), fm.error());
          break;
        }
        vfs::IoContext ctx;
        int64_t off = rng() % 3000;
        auto span = absl::Span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(data.data()), data.size());
        auto wo = (*fo)->PWrite(ctx, span, off);
        auto wm = (*fm)->PWrite(ctx, span, off);
        ASSERT_EQ(wo.ok(), wm.ok());
        break;
      }
    }
    log += std::to_string(step) + ": " + a + " " + b + "\n";
    auto so = Snap(ovl_), sm = Snap(model_);
    ASSERT_EQ(so, sm) << "after step " << step << "\n"
                      << Diff(so, sm) << "ops (op a b):\n"
                      << log;
  }
  EXPECT_EQ(Snap(lower_), lower_before);
  RecordProperty("exdev", exdev);
  // The sequence exercised the overlay (not only errors).
  EXPECT_GT(succeeded, 100);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomOpsTest, ::testing::Range(1, 9));

}  // namespace
}  // namespace sandbox::fs::overlay
