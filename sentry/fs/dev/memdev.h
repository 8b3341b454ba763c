// The memory character devices (drivers/char/mem.c, random.c): null, zero,
// full, random, urandom.
//
// Semantics, as Linux: null reads EOF and swallows writes; zero reads zeros
// and swallows writes; full reads zeros and fails writes with ENOSPC;
// random and urandom never block (Linux >= 5.6 once the pool is ready) and
// accept writes (entropy "mixing", counted and dropped). lseek always
// succeeds and returns 0 (noop_llseek / null_lseek keep f_pos at 0).
//
// Thread-safety: stateless.
#ifndef SENTRY_FS_DEV_MEMDEV_H_
#define SENTRY_FS_DEV_MEMDEV_H_

#include <stdint.h>

#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::dev {

enum class MemDevice { kNull, kZero, kFull, kRandom, kURandom };

class MemDevFile final : public vfs::VfsFile {
 public:
  MemDevFile(vfs::VirtualDentry vd, uint32_t flags, MemDevice kind)
      : VfsFile(std::move(vd), flags), kind_(kind) {}

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<size_t> PRead(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                        int64_t offset) override;
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override;
  KResult<size_t> PWrite(vfs::IoContext& ctx, absl::Span<const uint8_t> src,
                         int64_t offset) override;
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  // null, zero and full never bounce the guest's buffer (random and
  // urandom mix what is written into the pool, so they read it): as
  // Linux's write_null/write_zero/write_full, a write does not touch the
  // buffer (even a bad one); a read of zero/full clears the guest's pages
  // in place (read_iter_zero: short where the buffer faults).
  bool CanDirectIo(const platform::MemoryFile&) const override {
    return kind_ == MemDevice::kNull || kind_ == MemDevice::kZero ||
           kind_ == MemDevice::kFull;
  }
  KResult<size_t> ReadDirect(vfs::IoContext& ctx, vfs::GuestIo& dst,
                             int64_t offset) override;
  KResult<size_t> WriteDirect(vfs::IoContext& ctx, vfs::GuestIo& src,
                              int64_t offset) override;
  // Readiness is the default (always readable and writable); only random
  // has f_op->poll (random_poll), so only it may join an epoll set.
  bool CanPoll() const override { return kind_ == MemDevice::kRandom; }

 private:
  const MemDevice kind_;
};

// Fills `dst` with random bytes (getrandom(2) on the host, never blocking
// once the host's pool is initialized).
KResult<void> FillRandom(absl::Span<uint8_t> dst);

}  // namespace sandbox::fs::dev

#endif  // SENTRY_FS_DEV_MEMDEV_H_
