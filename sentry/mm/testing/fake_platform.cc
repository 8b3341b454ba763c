#include "sentry/mm/testing/fake_platform.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace sandbox::mm::testing {
namespace {
constexpr uint64_t kPage = abi::kPageSize;
}

FakeMemoryFile::FakeMemoryFile(uint64_t max_size) : size_(max_size) {
  fd_ = memfd_create("fake-memory-file", MFD_CLOEXEC);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    perror("FakeMemoryFile: memfd_create/ftruncate");
    abort();
  }
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (p == MAP_FAILED) {
    perror("FakeMemoryFile: mmap");
    abort();
  }
  base_ = static_cast<uint8_t*>(p);
  absl::MutexLock l(&mu_);
  free_[0] = size_;
}

FakeMemoryFile::~FakeMemoryFile() {
  munmap(base_, size_);
  close(fd_);
}

void FakeMemoryFile::FailNextAllocations(int n) {
  absl::MutexLock l(&mu_);
  fail_next_ = n;
}

absl::StatusOr<uint64_t> FakeMemoryFile::Allocate(uint64_t length) {
  absl::MutexLock l(&mu_);
  if (fail_next_ > 0) {
    --fail_next_;
    return absl::ResourceExhaustedError("injected failure");
  }
  if (length == 0 || length % kPage != 0) {
    return absl::InvalidArgumentError("bad length");
  }
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= length) {
      uint64_t off = it->first;
      uint64_t rest = it->second - length;
      free_.erase(it);
      if (rest > 0) free_[off + length] = rest;
      allocated_ += length;
      return off;
    }
  }
  return absl::ResourceExhaustedError("memory file full");
}

void FakeMemoryFile::Free(uint64_t offset, uint64_t length) {
  if (length == 0) return;
  if (free_hook_) free_hook_(offset, length);
  fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
            static_cast<off_t>(offset), static_cast<off_t>(length));
  absl::MutexLock l(&mu_);
  allocated_ -= length;
  uint64_t start = offset, end = offset + length;
  auto next = free_.lower_bound(start);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > start) abort();  // double free
    if (prev->first + prev->second == start) {
      start = prev->first;
      free_.erase(prev);
    }
  }
  if (next != free_.end()) {
    if (next->first < end) abort();  // double free
    if (next->first == end) {
      end += next->second;
      free_.erase(next);
    }
  }
  free_[start] = end - start;
}

bool FakeMemoryFile::InBounds(uint64_t offset, size_t n) const {
  return offset <= size_ && n <= size_ - offset;
}

bool FakeMemoryFile::Read(uint64_t offset, void* dst, size_t n) {
  if (!InBounds(offset, n)) return false;
  std::memcpy(dst, base_ + offset, n);
  return true;
}

bool FakeMemoryFile::Write(uint64_t offset, const void* src, size_t n) {
  if (!InBounds(offset, n)) return false;
  std::memcpy(base_ + offset, src, n);
  return true;
}

bool FakeMemoryFile::Zero(uint64_t offset, size_t n) {
  if (!InBounds(offset, n)) return false;
  std::memset(base_ + offset, 0, n);
  return true;
}

uint8_t* FakeMemoryFile::Internal(uint64_t offset, size_t n) {
  if (!InBounds(offset, n)) return nullptr;
  return base_ + offset;
}

bool FakeMemoryFile::IsFree(uint64_t offset) const {
  absl::MutexLock l(&mu_);
  auto it = free_.upper_bound(offset);
  if (it == free_.begin()) return false;
  --it;
  return offset < it->first + it->second;
}

uint64_t FakeMemoryFile::AllocatedBytes() const {
  absl::MutexLock l(&mu_);
  return allocated_;
}

absl::Status FakeAddressSpace::MapFile(uintptr_t addr, uint64_t offset,
                                       size_t length, int prot) {
  if (addr % kPage || offset % kPage || length % kPage || length == 0) {
    return absl::InvalidArgumentError("unaligned MapFile");
  }
  absl::MutexLock l(&mu_);
  ++map_calls_;
  for (uint64_t i = 0; i < length; i += kPage) {
    pages_[addr + i] = Page{offset + i, prot};
  }
  return absl::OkStatus();
}

absl::Status FakeAddressSpace::Unmap(uintptr_t addr, size_t length) {
  if (addr % kPage || length % kPage) {
    return absl::InvalidArgumentError("unaligned Unmap");
  }
  {
    absl::MutexLock l(&mu_);
    ++unmap_calls_;
    pages_.erase(pages_.lower_bound(addr), pages_.lower_bound(addr + length));
  }
  if (unmap_hook_) unmap_hook_();
  return absl::OkStatus();
}

bool FakeAddressSpace::Lookup(uintptr_t addr, Page* out) const {
  absl::MutexLock l(&mu_);
  auto it = pages_.find(addr & ~(kPage - 1));
  if (it == pages_.end()) return false;
  if (out != nullptr) *out = it->second;
  return true;
}

bool FakeAddressSpace::MapsAnyOf(uint64_t offset, uint64_t length) const {
  absl::MutexLock l(&mu_);
  for (const auto& [addr, page] : pages_) {
    if (page.offset >= offset && page.offset - offset < length) return true;
  }
  return false;
}

size_t FakeAddressSpace::MappedPages() const {
  absl::MutexLock l(&mu_);
  return pages_.size();
}

int FakeAddressSpace::map_calls() const {
  absl::MutexLock l(&mu_);
  return map_calls_;
}

absl::Status FakeAddressSpace::MapFilePopulate(uintptr_t addr, uint64_t offset,
                                               size_t length, int prot) {
  {
    absl::MutexLock l(&mu_);
    ++populate_calls_;
  }
  return MapFile(addr, offset, length, prot);
}

int FakeAddressSpace::populate_calls() const {
  absl::MutexLock l(&mu_);
  return populate_calls_;
}

int FakeAddressSpace::unmap_calls() const {
  absl::MutexLock l(&mu_);
  return unmap_calls_;
}

FakePlatform::FakePlatform(uint64_t memory_size) : mf_(memory_size) {}

absl::StatusOr<std::unique_ptr<platform::AddressSpace>>
FakePlatform::NewAddressSpace() {
  auto as = std::make_unique<FakeAddressSpace>();
  last_as_ = as.get();
  return std::unique_ptr<platform::AddressSpace>(std::move(as));
}

absl::StatusOr<std::unique_ptr<platform::Context>> FakePlatform::NewContext() {
  return absl::UnimplementedError("FakePlatform runs no guest code");
}

void FakePlatform::Cpuid(uint32_t leaf, uint32_t subleaf,
                         uint32_t out[4]) const {
  (void)subleaf;
  out[0] = out[1] = out[2] = out[3] = 0;
  if (leaf == 1) out[3] = 0x178bfbff;  // a typical leaf-1 EDX
}

}  // namespace sandbox::mm::testing
