// Replays fuzz inputs through LLVMFuzzerTestOneInput as gtest cases, so the
// corpus of each fuzz target runs in CI with the ordinary (gcc) build.
//
// Usage: <target> [gtest flags] FILE_OR_DIR...
// Each regular file (directories are walked) becomes a case Corpus.<path>.
// Builtin.* cases feed the empty input and every one-byte input. With no
// files at all, Corpus.Missing fails: a replay that checks nothing must not
// pass.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
    __attribute__((weak));

namespace {

// A gtest-friendly name: [A-Za-z0-9_] only.
std::string CaseName(const std::string& path) {
  std::string name;
  for (char c : path) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_';
    name.push_back(ok ? c : '_');
  }
  return name;
}

void RunInput(const std::string& bytes) {
  // A copy in its own allocation, so out-of-bounds reads have a chance to be
  // noticed by a sanitizer.
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(copy.data(), copy.size());
}

class ReplayFile : public testing::Test {
 public:
  explicit ReplayFile(std::string path) : path_(std::move(path)) {}
  void TestBody() override {
    std::ifstream in(path_, std::ios::binary);
    ASSERT_TRUE(in) << "cannot open " << path_;
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    RunInput(bytes);
  }

 private:
  std::string path_;
};

TEST(Builtin, Empty) { RunInput(""); }

TEST(Builtin, EveryByte) {
  for (int b = 0; b < 256; ++b) RunInput(std::string(1, static_cast<char>(b)));
}

void CollectFiles(const std::string& arg, std::vector<std::string>* files) {
  std::error_code ec;
  if (std::filesystem::is_directory(arg, ec)) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(arg, ec)) {
      if (entry.is_regular_file(ec)) files->push_back(entry.path().string());
    }
  } else {
    files->push_back(arg);  // A missing file fails in its own case.
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) CollectFiles(argv[i], &files);
  for (const std::string& path : files) {
    testing::RegisterTest(
        "Corpus", CaseName(path).c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [path]() -> testing::Test* { return new ReplayFile(path); });
  }
  if (files.empty()) {
    testing::RegisterTest("Corpus", "Missing", nullptr, nullptr, __FILE__,
                          __LINE__, []() -> testing::Test* {
                            struct Missing : testing::Test {
                              void TestBody() override {
                                FAIL() << "no corpus files given";
                              }
                            };
                            return new Missing;
                          });
  }
  return RUN_ALL_TESTS();
}
