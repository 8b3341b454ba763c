#include "sentry/vfs/file_description.h"

namespace sandbox::vfs {

void FileDescription::SetAsyncEntry(std::unique_ptr<WaitEntry> e) {
  std::unique_ptr<WaitEntry> old;
  {
    absl::MutexLock l(&async_mu_);
    old = std::move(async_entry_);
    async_entry_ = std::move(e);
  }
  if (old != nullptr) EventUnregister(old.get());
}

void FileDescription::SetStatusFlags(uint32_t flags) {
  constexpr uint32_t kSettable =
      O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME | O_NONBLOCK;
  uint32_t old = flags_.load(std::memory_order_relaxed);
  while (!flags_.compare_exchange_weak(
      old, (old & ~kSettable) | (flags & kSettable))) {
  }
}

bool FileDescription::readable() const {
  uint32_t f = status_flags();
  if (f & O_PATH) return false;
  return (f & O_ACCMODE) == O_RDONLY || (f & O_ACCMODE) == O_RDWR;
}

bool FileDescription::writable() const {
  uint32_t f = status_flags();
  if (f & O_PATH) return false;
  return (f & O_ACCMODE) == O_WRONLY || (f & O_ACCMODE) == O_RDWR;
}

KResult<size_t> FileDescription::Read(IoContext&, absl::Span<uint8_t>) {
  return kEINVAL;
}
KResult<size_t> FileDescription::Write(IoContext&, absl::Span<const uint8_t>) {
  return kEINVAL;
}
KResult<size_t> FileDescription::PRead(IoContext&, absl::Span<uint8_t>,
                                       int64_t) {
  return kESPIPE;
}
KResult<size_t> FileDescription::PWrite(IoContext&, absl::Span<const uint8_t>,
                                        int64_t) {
  return kESPIPE;
}
KResult<size_t> FileDescription::ReadDirect(IoContext&, GuestIo&, int64_t) {
  return kEINVAL;
}
KResult<size_t> FileDescription::WriteDirect(IoContext&, GuestIo&, int64_t) {
  return kEINVAL;
}
KResult<int64_t> FileDescription::Seek(int64_t, int) { return kESPIPE; }
KResult<abi::Stat> FileDescription::Stat() { return kEINVAL; }
KResult<void> FileDescription::Sync(bool) { return kEINVAL; }
KResult<uint64_t> FileDescription::Ioctl(IoContext&, uint32_t, uint64_t) {
  return kENOTTY;
}

}  // namespace sandbox::vfs
