// Test doubles for the platform: a memfd-backed MemoryFile, an AddressSpace
// that records what is mapped where, and a Platform that hands them out.
// For mm/loader/kernel unit tests that do not run guest code.
#ifndef SENTRY_MM_TESTING_FAKE_PLATFORM_H_
#define SENTRY_MM_TESTING_FAKE_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "platform/memory_file.h"
#include "platform/platform.h"
#include "sentry/abi/linux.h"

namespace sandbox::mm::testing {

// A MemoryFile over a memfd, mapped whole into the test process. First-fit
// allocator; Free punches holes.
class FakeMemoryFile : public platform::MemoryFile {
 public:
  // Aborts the test process if the memfd cannot be made.
  explicit FakeMemoryFile(uint64_t max_size = 1ull << 32);
  ~FakeMemoryFile() override;

  int fd() const override { return fd_; }
  absl::StatusOr<uint64_t> Allocate(uint64_t length) override;
  void Free(uint64_t offset, uint64_t length) override;
  bool Read(uint64_t offset, void* dst, size_t n) override;
  bool Write(uint64_t offset, const void* src, size_t n) override;
  bool Zero(uint64_t offset, size_t n) override;
  uint8_t* Internal(uint64_t offset, size_t n) override;
  uint64_t AllocatedBytes() const override;

  // Makes the next `n` Allocate calls fail (RESOURCE_EXHAUSTED).
  void FailNextAllocations(int n);
  // Whether the page at `offset` is free (never allocated, or freed).
  bool IsFree(uint64_t offset) const;
  // Called by Free(offset, length) before it frees anything (nullptr:
  // none). Set it while no other thread uses this file.
  void SetFreeHook(std::function<void(uint64_t, uint64_t)> hook) {
    free_hook_ = std::move(hook);
  }

 private:
  bool InBounds(uint64_t offset, size_t n) const;

  int fd_ = -1;
  uint8_t* base_ = nullptr;
  const uint64_t size_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, uint64_t> free_ ABSL_GUARDED_BY(mu_);  // offset -> len
  uint64_t allocated_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_next_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void(uint64_t, uint64_t)> free_hook_;
};

// Records mappings page by page.
class FakeAddressSpace : public platform::AddressSpace {
 public:
  struct Page {
    uint64_t offset;
    int prot;
  };
  absl::Status MapFile(uintptr_t addr, uint64_t offset, size_t length,
                       int prot) override;
  // MapFile, counted apart (populate_calls()).
  absl::Status MapFilePopulate(uintptr_t addr, uint64_t offset, size_t length,
                               int prot) override;
  absl::Status Unmap(uintptr_t addr, size_t length) override;

  // The mapping of the page containing addr, or nullptr-like empty.
  bool Lookup(uintptr_t addr, Page* out) const;
  // Whether any page is mapped from [offset, offset+length) of the file.
  bool MapsAnyOf(uint64_t offset, uint64_t length) const;
  // Called by Unmap after it unmapped (nullptr: none), with no lock of this
  // object held: lets a test run something in the middle of an mm
  // operation. Set it while no other thread uses this address space.
  void SetUnmapHook(std::function<void()> hook) {
    unmap_hook_ = std::move(hook);
  }
  size_t MappedPages() const;
  int map_calls() const;
  int unmap_calls() const;
  int populate_calls() const;

 private:
  mutable absl::Mutex mu_;
  std::map<uintptr_t, Page> pages_ ABSL_GUARDED_BY(mu_);
  int map_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int unmap_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int populate_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void()> unmap_hook_;
};

class FakePlatform : public platform::Platform {
 public:
  explicit FakePlatform(uint64_t memory_size = 1ull << 32);

  absl::StatusOr<std::unique_ptr<platform::AddressSpace>> NewAddressSpace()
      override;
  absl::StatusOr<std::unique_ptr<platform::Context>> NewContext() override;
  uintptr_t MinUserAddress() const override { return 0x10000; }
  uintptr_t MaxUserAddress() const override { return abi::kTaskSizeMax; }
  size_t FpStateSize() const override { return 2688; }
  void Cpuid(uint32_t leaf, uint32_t subleaf, uint32_t out[4]) const override;
  platform::MemoryFile& memory_file() override { return mf_; }

  FakeMemoryFile& fake_memory_file() { return mf_; }
  // The last address space handed out (owned by its MemoryManager).
  FakeAddressSpace* last_address_space() { return last_as_; }

 private:
  FakeMemoryFile mf_;
  FakeAddressSpace* last_as_ = nullptr;
};

}  // namespace sandbox::mm::testing

#endif  // SENTRY_MM_TESTING_FAKE_PLATFORM_H_
