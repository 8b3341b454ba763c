// Memory syscalls: argument decoding only; the MemoryManager does the rest.
#include <sys/mman.h>

#include "sentry/abi/syscalls.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/table.h"

namespace sandbox::syscalls {
namespace {

// brk(2).
SyscallResult Brk(Task& t, UserAddr addr) {
  return static_cast<uint64_t>(t.mm().Brk(addr.addr));
}

// mmap(2).
SyscallResult Mmap(Task& t, UserAddr addr, uint64_t length, Flags prot,
                   Flags flags, Fd fd, uint64_t offset) {
  if (!(flags.v & MAP_ANONYMOUS)) {
    // File mappings come with the VFS (a Mappable per file); until then
    // no file can be mapped, as for a file without an mmap operation.
    TRY(vfs::FileRef f, t.fd_table().Get(fd.fd, nullptr));
    return kENODEV;
  }
  mm::MmapOpts opts;
  opts.addr = addr.addr;
  opts.length = length;
  opts.prot = static_cast<int>(prot.v);
  opts.flags = static_cast<int>(flags.v);
  opts.offset = offset;
  TRY(uintptr_t a, t.mm().Mmap(opts));
  return static_cast<uint64_t>(a);
}

// munmap(2).
SyscallResult Munmap(Task& t, UserAddr addr, uint64_t length) {
  TRY_VOID(t.mm().Munmap(addr.addr, length));
  return uint64_t{0};
}

// mprotect(2).
SyscallResult Mprotect(Task& t, UserAddr addr, uint64_t length, Flags prot) {
  TRY_VOID(t.mm().Mprotect(addr.addr, length, static_cast<int>(prot.v)));
  return uint64_t{0};
}

// madvise(2).
SyscallResult Madvise(Task& t, UserAddr addr, uint64_t length, int32_t advice) {
  TRY_VOID(t.mm().Madvise(addr.addr, length, advice));
  return uint64_t{0};
}

// mremap(2).
SyscallResult Mremap(Task& t, UserAddr old_addr, uint64_t old_size,
                     uint64_t new_size, Flags flags, UserAddr new_addr) {
  TRY(uintptr_t a, t.mm().Mremap(old_addr.addr, old_size, new_size,
                                 static_cast<int>(flags.v), new_addr.addr));
  return static_cast<uint64_t>(a);
}

}  // namespace

void RegisterMmSyscalls(SyscallTable& t) {
  using namespace abi;  // NOLINT: nr::
  t.Full<&Brk>(nr::brk).hex_result = true;
  t.Partial<&Mmap>(nr::mmap, "anonymous mappings; files ENODEV until the VFS")
      .hex_result = true;
  t.Full<&Munmap>(nr::munmap);
  t.Full<&Mprotect>(nr::mprotect);
  t.Partial<&Madvise>(nr::madvise,
                      "DONTNEED, FREE, REMOVE, POPULATE_*; other advice "
                      "accepted and ignored");
  t.Partial<&Mremap>(nr::mremap,
                     "no duplication of shared mappings (old size 0)")
      .hex_result = true;
}

}  // namespace sandbox::syscalls
