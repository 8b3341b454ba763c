// FileReader: how the loader reads an executable. The kernel backs it with
// a host FD now and with a VFS file description later.
#ifndef SENTRY_LOADER_FILE_READER_H_
#define SENTRY_LOADER_FILE_READER_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <utility>

#include "sentry/base/result.h"
#include "sentry/mm/mappable.h"

namespace sandbox::loader {

class FileReader {
 public:
  virtual ~FileReader() = default;
  // Reads up to n bytes at `offset`; fewer only at end of file.
  virtual KResult<size_t> ReadAt(uint64_t offset, void* buf, size_t n) = 0;
  // The file's size in bytes.
  virtual KResult<uint64_t> Size() = 0;
  // The file's st_dev and st_ino, which /proc/pid/maps shows for the
  // segments loaded from it; {0, 0} if unknown.
  virtual std::pair<uint64_t, uint64_t> Identity() { return {0, 0}; }
  // The file's pages (its page cache), if it can be mapped: the loader then
  // maps PT_LOAD segments from them copy-on-write, as Linux's elf_map, so
  // that only the pages the program touches are ever read. nullptr: the
  // segments are copied into anonymous memory at load time.
  virtual std::shared_ptr<mm::Mappable> GetMappable() { return nullptr; }
};

// Reads a host file descriptor with pread(2). Does not own the FD.
class HostFdReader : public FileReader {
 public:
  explicit HostFdReader(int fd) : fd_(fd) {}
  KResult<size_t> ReadAt(uint64_t offset, void* buf, size_t n) override;
  KResult<uint64_t> Size() override;

 private:
  const int fd_;
};

// Reads an in-memory copy (tests, fuzzing, embedded images).
class BufferReader : public FileReader {
 public:
  explicit BufferReader(std::string data) : data_(std::move(data)) {}
  BufferReader(const void* data, size_t n)
      : data_(static_cast<const char*>(data), n) {}
  KResult<size_t> ReadAt(uint64_t offset, void* buf, size_t n) override;
  KResult<uint64_t> Size() override { return uint64_t{data_.size()}; }

 private:
  const std::string data_;
};

}  // namespace sandbox::loader

#endif  // SENTRY_LOADER_FILE_READER_H_
