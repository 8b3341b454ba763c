// Fake guest buffers for direct-I/O tests and benchmarks of file systems
// (tmpfs, gofer): ReadDirect/WriteDirect see them as a vfs::GuestIo made of
// memory-file pages, as the MemoryManager hands out the guest's pages.
#ifndef SENTRY_VFS_TESTING_FAKE_GUEST_IO_H_
#define SENTRY_VFS_TESTING_FAKE_GUEST_IO_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::vfs::testing {

// A guest buffer of `segments` (lengths), each in its own memory-file
// allocation; only the first `accessible` bytes of the whole buffer may be
// touched (the rest "faults"). Walk hands out pieces that never cross a
// multiple of `piece` bytes within a segment (the default, one page, makes
// multi-piece paths run), and counts them in `pieces`.
class FakeGuestIo final : public GuestIo {
 public:
  static constexpr size_t kPage = 4096;

  FakeGuestIo(platform::MemoryFile& mf, std::vector<size_t> segments,
              size_t accessible = SIZE_MAX, size_t piece = kPage)
      : mf_(mf), accessible_(accessible), piece_(piece) {
    for (size_t len : segments) {
      size_t alloc = std::max<size_t>(kPage, (len + kPage - 1) / kPage * kPage);
      auto off = mf.Allocate(alloc);
      EXPECT_TRUE(off.ok());
      segs_.push_back({*off, len});
      size_ += len;
    }
  }
  size_t size() const override { return size_; }
  platform::MemoryFile& memory_file() override { return mf_; }
  KResult<size_t> Walk(
      size_t n,
      absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) override {
    size_t done = 0;
    for (const Seg& s : segs_) {
      for (size_t in = 0; in < s.len && done < n;) {
        if (done >= accessible_) {
          return done == 0 ? KResult<size_t>(kEFAULT) : KResult<size_t>(done);
        }
        size_t k = std::min(
            {s.len - in, n - done, piece_ - in % piece_, accessible_ - done});
        ++pieces;
        size_t got = fn(s.off + in, done, k);
        done += got;
        in += got;
        if (got < k) return done;
      }
    }
    return done;
  }
  // The whole buffer's bytes.
  std::string Contents() {
    std::string out;
    for (const Seg& s : segs_) {
      std::string part(s.len, '\0');
      EXPECT_TRUE(mf_.Read(s.off, part.data(), s.len));
      out += part;
    }
    return out;
  }
  // Writes `data` from the start of the buffer.
  void Fill(std::string_view data) {
    size_t at = 0;
    for (const Seg& s : segs_) {
      size_t k = std::min(s.len, data.size() - at);
      EXPECT_TRUE(mf_.Write(s.off, data.data() + at, k));
      at += k;
    }
  }
  int pieces = 0;

 private:
  struct Seg {
    uint64_t off;
    size_t len;
  };
  platform::MemoryFile& mf_;
  const size_t accessible_;
  const size_t piece_;
  std::vector<Seg> segs_;
  size_t size_ = 0;
};

// A guest buffer that is one run of memory-file pages the caller allocated
// (as a malloc'd buffer faulted in one window is): every walk is one piece,
// so a direct read is one host pread. Allocates nothing: cheap enough to
// build inside a benchmark's timed loop.
class OneRunGuestIo final : public GuestIo {
 public:
  OneRunGuestIo(platform::MemoryFile& mf, uint64_t off, size_t len)
      : mf_(mf), off_(off), len_(len) {}
  size_t size() const override { return len_; }
  platform::MemoryFile& memory_file() override { return mf_; }
  KResult<size_t> Walk(
      size_t n,
      absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) override {
    return fn(off_, 0, std::min(n, len_));
  }

 private:
  platform::MemoryFile& mf_;
  const uint64_t off_;
  const size_t len_;
};

}  // namespace sandbox::vfs::testing

#endif  // SENTRY_VFS_TESTING_FAKE_GUEST_IO_H_
