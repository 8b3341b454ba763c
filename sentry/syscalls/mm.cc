// Memory syscalls: argument decoding only; the MemoryManager does the rest.
#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <vector>

#include "sentry/abi/linux.h"
#include "sentry/abi/syscalls.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/handler.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace sandbox::syscalls {
namespace {

// brk(2).
SyscallResult Brk(Task& t, UserAddr addr) {
  return static_cast<uint64_t>(t.mm().Brk(addr.addr));
}

// mmap(2). A file mapping maps the file's Mappable (its page cache: tmpfs
// and memfd pages in the memory file); the MemoryManager checks the access
// the description allows (MmapOpts::file), the file's seals and the rest.
SyscallResult Mmap(Task& t, UserAddr addr, uint64_t length, Flags prot,
                   Flags flags, Fd fd, uint64_t offset) {
  mm::MmapOpts opts;
  opts.addr = addr.addr;
  opts.length = length;
  opts.prot = static_cast<int>(prot.v);
  opts.flags = static_cast<int>(flags.v);
  opts.offset = offset;
  // Keeps the description open while it is being mapped.
  vfs::FileRef f;
  if (!(flags.v & MAP_ANONYMOUS)) {
    // ksys_mmap_pgoff(): fget() (an O_PATH description is EBADF), then
    // MAP_HUGETLB is EINVAL for a file not on hugetlbfs (there is none).
    TRY(f, t.fd_table().Get(fd.fd, nullptr));
    if (f->status_flags() & O_PATH) return kEBADF;
    if (flags.v & MAP_HUGETLB) return kEINVAL;
    mm::MmapOpts::FileAccess access;
    access.readable = f->readable();
    access.writable = f->writable();
    opts.mappable = f->GetMappable();
    if (const vfs::VirtualDentry* where = f->location(); where != nullptr) {
      access.noexec = where->mount->flags() & vfs::kMountNoExec;
      if (where->mount->internal()) {
        // What /proc/pid/maps shows for a memfd (d_path of an unlinked
        // file of the shm mount). Other files' paths come with /proc.
        opts.name = vfs::DPath(t.fs().Root(), *where);
      }
      // A regular file's mapping shows its device, inode and path (the
      // path as of the mmap: a later rename or unlink is not reflected).
      if (where->dentry->inode().IsRegular()) {
        if (KResult<abi::Stat> st = f->Stat(); st.ok()) {
          opts.dev = st->st_dev;
          opts.ino = st->st_ino;
        }
        if (opts.name.empty()) {
          KResult<std::string> p = vfs::GetCwd(t.fs().Root(), *where);
          if (p.ok()) opts.name = *p;
        }
      }
    }
    opts.file = access;
  }
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

// msync(2): the mapped pages are the files' own (tmpfs, memfd, shared
// memory), so this validates and walks the range as Linux does.
SyscallResult Msync(Task& t, UserAddr addr, uint64_t length, int32_t flags) {
  TRY_VOID(t.mm().Msync(addr.addr, length, flags));
  return uint64_t{0};
}

// mincore(2), in steps of at most a page of results, as Linux does; the
// results of the steps before a failure stay written.
SyscallResult Mincore(Task& t, UserAddr start, uint64_t length, UserAddr vec) {
  constexpr uint64_t kPage = abi::kPageSize;
  using abi::AccessOk;
  uint64_t addr = start.addr;
  if (addr % kPage != 0) return kEINVAL;
  if (!AccessOk(addr, length)) return kENOMEM;
  uint64_t pages = length / kPage + (length % kPage != 0 ? 1 : 0);
  uint64_t out = vec.addr;
  if (!AccessOk(out, pages)) return kEFAULT;
  std::vector<uint8_t> tmp(kPage);
  while (pages > 0) {
    TRY(size_t n,
        t.mm().Mincore(addr, std::min<uint64_t>(pages, kPage), tmp.data()));
    TRY_VOID(t.CopyOutFull(out, tmp.data(), n));
    pages -= n;
    out += n;
    addr += n * kPage;
  }
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Brk);
SANDBOX_SYSCALL_HANDLER(Mmap);
SANDBOX_SYSCALL_HANDLER(Msync);
SANDBOX_SYSCALL_HANDLER(Mincore);
SANDBOX_SYSCALL_HANDLER(Munmap);
SANDBOX_SYSCALL_HANDLER(Mprotect);
SANDBOX_SYSCALL_HANDLER(Madvise);
SANDBOX_SYSCALL_HANDLER(Mremap);

}  // namespace sandbox::syscalls
