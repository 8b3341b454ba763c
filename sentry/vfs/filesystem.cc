#include "sentry/vfs/filesystem.h"

#include <atomic>

namespace sandbox::vfs {
namespace {

// Anonymous device minors (Linux's get_anon_bdev), never reused.
std::atomic<uint32_t> next_anon_minor{1};

}  // namespace

uint64_t MakeDev(uint32_t major, uint32_t minor) {
  return (minor & 0xff) | (uint64_t{major & 0xfff} << 8) |
         (uint64_t{minor & ~0xffu} << 12);
}

Filesystem::Filesystem()
    : dev_(MakeDev(0,
                   next_anon_minor.fetch_add(1, std::memory_order_relaxed))) {}

}  // namespace sandbox::vfs
