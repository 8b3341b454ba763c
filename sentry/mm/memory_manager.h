// MemoryManager: one guest address space (what Linux calls an mm_struct).
//
// VMAs record what the guest asked for (mmap/brk/mprotect): range, prot,
// max prot, private/shared, anonymous or a Mappable. A separate map of
// "pmas" records what is actually backed: guest page range -> MemoryFile
// offset. Every pma lies inside one VMA and is mapped into the platform
// AddressSpace with its VMA's prot (unmapped while the VMA is PROT_NONE).
// Faults populate in runs (up to a 2 MiB-aligned window, 64 KiB for
// grows-down stacks, bounded by the VMA and by pages already backed).
// Copy-in/copy-out go through the MemoryFile (never through the stub) and
// never crash the Sentry: a bad guest address is EFAULT.
//
// fork (Fork) shares private pages copy-on-write: both mms keep the pages
// (counted in a PageRefs shared by the fork family) and map them
// read-only; the first write copies (or, if the other owner is gone, just
// takes the page). Shared anonymous memory is an AnonSharedMappable, so
// fork children see the same pages.
//
// Lock order:
//   MemoryManager::mapping_mu_    (vmas_, brk, layout)
//     Mappable::AddMapping/RemoveMapping locks
//       MemoryManager::active_mu_   (pmas_, the platform AddressSpace)
//         Mappable::Translate locks, PageRefs::mu_
//           platform::AddressSpace, platform::MemoryFile (internal)
//
// Thread-safety: all public methods are thread-safe (the threads of one
// guest process share an mm). No method blocks on the host other than for
// AddressSpace map/unmap requests and MemoryFile copies.
#ifndef SENTRY_MM_MEMORY_MANAGER_H_
#define SENTRY_MM_MEMORY_MANAGER_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "platform/memory_file.h"
#include "platform/platform.h"
#include "sentry/base/result.h"
#include "sentry/mm/layout.h"
#include "sentry/mm/mappable.h"
#include "sentry/mm/page_refs.h"

namespace sandbox::mm {

// Arguments of mmap(2) after the syscall layer has decoded them.
struct MmapOpts {
  uintptr_t addr = 0;   // hint, or the address with MAP_FIXED*
  size_t length = 0;    // bytes (rounded up to pages here)
  int prot = 0;         // PROT_READ|PROT_WRITE|PROT_EXEC
  int flags = 0;        // MAP_*
  uint64_t offset = 0;  // file offset; must be page-aligned (EINVAL)
  // File-backed mappings (the VFS issue): the pages and the widest prot the
  // open file allows (e.g. no PROT_WRITE for a MAP_SHARED read-only fd,
  // giving EACCES on mprotect like Linux's VM_MAY* bits). nullptr =
  // anonymous.
  std::shared_ptr<Mappable> mappable;
  int max_prot = PROT_READ | PROT_WRITE | PROT_EXEC;
  // Name for /proc/pid/maps ("[heap]", "[stack]", a path). Optional.
  std::string name;
  // The device (st_dev) and inode /proc/pid/maps shows: the mapped file's,
  // or for an anonymous copy of a file (the loader's ELF segments) that
  // file's; then `offset` is kept as the file offset maps shows. 0: none.
  uint64_t dev = 0, ino = 0;
  // mmap(2) of an open file (not MAP_ANONYMOUS): what the file description
  // allows. With `file` set, Mmap applies do_mmap's file checks after
  // placing the mapping, in Linux's order: EOVERFLOW (offset + length past
  // the largest file offset), EOPNOTSUPP (MAP_SHARED_VALIDATE with unknown
  // flags), EACCES (MAP_SHARED with PROT_WRITE and no write access; no read
  // access), EPERM (PROT_EXEC on a noexec mount), ENODEV (`mappable` null:
  // the file has no mmap), EINVAL (MAP_GROWSDOWN), then the Mappable's
  // CheckNewMapping (memfd seals). The mapping's max prot is Linux's VM_MAY*
  // (no PROT_WRITE for MAP_SHARED of a read-only description, no PROT_EXEC
  // on a noexec mount), intersected with `max_prot`.
  struct FileAccess {
    bool readable = false;  // FMODE_READ
    bool writable = false;  // FMODE_WRITE
    bool noexec = false;    // the file's mount is noexec
  };
  std::optional<FileAccess> file;
};

// One VMA as /proc/pid/maps shows it.
struct VmaInfo {
  uintptr_t start = 0;
  uintptr_t end = 0;
  int prot = 0;
  int max_prot = 0;
  bool shared = false;
  bool grows_down = false;
  bool anonymous = true;
  uint64_t offset = 0;
  std::string name;
  bool dont_fork = false;     // MADV_DONTFORK
  bool wipe_on_fork = false;  // MADV_WIPEONFORK
  bool locked = false;        // MAP_LOCKED (VM_LOCKED)
  uint64_t dev = 0, ino = 0;  // the file's, for maps (MmapOpts::dev/ino)
};

class MemoryManager : public MappingSpace {
 public:
  // Creates an empty address space on `platform` (a new platform
  // AddressSpace, the platform's MemoryFile). The layout (mmap base, stack
  // top) is chosen from `opts` like Linux's arch_pick_mmap_layout.
  static KResult<std::unique_ptr<MemoryManager>> Create(
      platform::Platform& platform, const LayoutOptions& opts = {});
  // For tests and special set-ups: an explicit AddressSpace and MemoryFile.
  static std::unique_ptr<MemoryManager> CreateWith(
      std::unique_ptr<platform::AddressSpace> as, platform::MemoryFile& mf,
      const Layout& layout);

  // fork(2): a new mm with a copy of this one's VMAs, brk and layout, in
  // the address space `as`. Private pages become copy-on-write in both;
  // shared mappings share; MADV_DONTFORK VMAs are left out and
  // MADV_WIPEONFORK ones start empty in the child. ENOMEM if `platform`
  // cannot make an address space.
  KResult<std::unique_ptr<MemoryManager>> Fork(platform::Platform& platform);
  KResult<std::unique_ptr<MemoryManager>> Fork(
      std::unique_ptr<platform::AddressSpace> as);

  // Frees every page this mm owns.
  ~MemoryManager() override;
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  // The platform address space, for Context::Switch.
  platform::AddressSpace& address_space() { return *as_; }
  platform::MemoryFile& memory_file() { return mf_; }
  // Immutable after creation.
  const Layout& layout() const { return layout_; }

  // ---- Guest memory access (syscall arguments). ----
  // Return the number of bytes copied; a copy that reaches an unmapped or
  // inaccessible page stops there and returns what it copied before it, or
  // EFAULT if that is nothing. CopyIn needs a readable VMA (any of R/W/X, as
  // Linux on x86), CopyOut a writable one. n == 0 returns 0 without checks.
  KResult<size_t> CopyIn(uintptr_t addr, void* dst, size_t n);
  KResult<size_t> CopyOut(uintptr_t addr, const void* src, size_t n);
  // Direct I/O (read(2)/write(2) of files whose data lives in the memory
  // file, without a bounce buffer): calls fn(file_offset, at, k) for the
  // successive pieces of [addr, addr+n) as runs of memory-file bytes, at
  // = offset of the piece in the range. `write`: the guest's memory is
  // written (CopyOut's rules: a writable VMA, copy-on-write broken first),
  // else read (CopyIn's). fn returns how many of the k bytes it handled;
  // fewer stops the walk. Returns the bytes handled; a piece the guest may
  // not access ends the walk there, and is EFAULT if nothing was handled
  // before it (fn returning 0 at once is 0, not EFAULT). n == 0 returns 0.
  // fn runs with mapping_mu_ and active_mu_ held (shared or exclusive): it
  // may take Mappable::Translate locks (a file's Inode::mu_) and use the
  // MemoryFile, and must not call into any MemoryManager.
  KResult<size_t> WalkGuest(
      uintptr_t addr, size_t n, bool write,
      absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn);
  // Whether the address space maps all of [addr, addr + n) writable to
  // pages a write needs no work for (no copy on write, no write-back
  // tracking): a write through the stub's own mapping (a guest-side copy,
  // platform/guest_copy.h) then lands where a CopyOut would. A snapshot: a
  // racing munmap or fork makes such a write fail (EFAULT in the host), not
  // land elsewhere, since the address space maps only pages the mm holds.
  bool MappedWritable(uintptr_t addr, size_t n);
  // Zeroes guest memory, with CopyOut's rules.
  KResult<size_t> ZeroOut(uintptr_t addr, size_t n);
  // Reads a NUL-terminated string whose NUL lies within the first max_len
  // bytes (so at most max_len-1 characters: CopyInString(addr, PATH_MAX)
  // is Linux's getname()). ENAMETOOLONG if there is no NUL in those bytes,
  // EFAULT if the string runs into a bad address first. Never reads past
  // the page holding the NUL.
  KResult<std::string> CopyInString(uintptr_t addr, size_t max_len);

  // The kernel's own access (loader: segments, initial stack; ptrace;
  // /proc/pid/mem): like CopyIn/CopyOut but ignoring the VMA's prot (a VMA
  // must still exist). Must not be used with guest-chosen intent to bypass
  // protections.
  KResult<size_t> ForceCopyIn(uintptr_t addr, void* dst, size_t n);
  KResult<size_t> ForceCopyOut(uintptr_t addr, const void* src, size_t n);

  // Runs fn on the Sentry's own mapping of [addr, addr+len), which must lie
  // in one page and be accessible for `access` (for futex words and other
  // atomics). The page is populated first; fn runs with active_mu_ held
  // (shared), so it must be short and must not call back into the mm.
  KResult<void> WithInternalMapping(uintptr_t addr, size_t len,
                                    platform::AccessType access,
                                    absl::FunctionRef<void(uint8_t*)> fn);

  // The object a shared futex word at `addr` lives in (Linux's
  // get_futex_key without FUTEX_PRIVATE_FLAG): for a MAP_SHARED mapping,
  // its Mappable (a tmpfs, memfd or Gofer file, shared anonymous memory)
  // and the byte offset of addr in it, the same for every mapping of that
  // page in any mm at any address (fork, two aliases, /dev/shm); for a
  // private mapping, a null `mappable` (the futex is keyed by mm and
  // address; a private file page already shared with the file is not
  // looked through, see README). The page is faulted in first, as
  // get_user_pages does (for writing with `write`: FUTEX_WAKE_OP's second
  // word). EFAULT: no VMA covers addr, it allows neither reading nor
  // writing (with `write`: no writing), or its page cannot be backed
  // (beyond a file's end).
  struct SharedObject {
    std::shared_ptr<Mappable> mappable;  // keeps the object alive
    uint64_t offset = 0;
  };
  KResult<SharedObject> FutexObjectAt(uintptr_t addr, bool write = false);

  // ---- Faults. ----
  // Resolves a guest fault at `addr`: backs and maps a run of pages around
  // it if a VMA allows the access (write needs PROT_WRITE, execute
  // PROT_EXEC, read any of R/W/X); grows a MAP_GROWSDOWN VMA down to it if
  // it lies just below one. EFAULT: deliver SIGSEGV (SEGV_MAPERR if no VMA,
  // SEGV_ACCERR otherwise: see FaultIsAccessError). ENOMEM: out of memory.
  KResult<void> HandleFault(uintptr_t addr, platform::AccessType access);
  // True if a VMA covers addr (so a failed fault is SEGV_ACCERR).
  bool FaultIsAccessError(uintptr_t addr);

  // ---- Syscalls. ----
  // brk(2) with Linux semantics: returns the new break, or the old one when
  // the request fails (below the start, runs into a mapping, out of
  // memory). The break itself is not page-rounded; its mapping is.
  uintptr_t Brk(uintptr_t addr);
  // mmap(2). Errors as Linux: EINVAL (length 0, unaligned offset or
  // MAP_FIXED address, bad map type, MAP_SHARED|MAP_GROWSDOWN anonymous),
  // ENOMEM (no room, length overflow, beyond the address space, too many
  // VMAs), EEXIST (MAP_FIXED_NOREPLACE over a mapping), EPERM (MAP_FIXED
  // below the minimum address), EOPNOTSUPP (MAP_SHARED_VALIDATE with unknown
  // flags on a file).
  KResult<uintptr_t> Mmap(const MmapOpts& opts);
  // munmap(2): EINVAL for an unaligned address, zero length or a range
  // beyond the address space; unmapped holes are fine.
  KResult<void> Munmap(uintptr_t addr, size_t length);
  // mprotect(2): EINVAL (unaligned address, unknown prot bits,
  // PROT_GROWSDOWN|PROT_GROWSUP), ENOMEM (a hole in the range, overflow),
  // EACCES (more than the VMA's max prot). Like Linux, VMAs before the
  // failing point keep their new protection.
  KResult<void> Mprotect(uintptr_t addr, size_t length, int prot);

  // madvise(2). MADV_DONTNEED (and _LOCKED) drops the pages of private
  // mappings (anonymous memory reads as zeros again, file pages are
  // re-read); MADV_FREE does so for private anonymous memory (EINVAL
  // elsewhere); MADV_REMOVE frees shared anonymous memory (EINVAL for
  // private mappings); MADV_POPULATE_READ/WRITE populate; the other
  // advice values are accepted and ignored. EINVAL: unaligned address,
  // unknown advice, wrapping range. ENOMEM: part of the range is unmapped
  // (the mapped parts are still advised, as Linux does). EPERM:
  // MADV_HWPOISON/MADV_SOFT_OFFLINE.
  KResult<void> Madvise(uintptr_t addr, size_t length, int advice);
  // mremap(2) with MREMAP_MAYMOVE, MREMAP_FIXED and MREMAP_DONTUNMAP.
  // Shrinks in place, grows in place when the space above is free,
  // otherwise moves (pages move with the mapping; nothing is copied). Old
  // size 0 with MREMAP_MAYMOVE duplicates a shared mapping (a second
  // mapping of the same object and offset). EINVAL: bad flags, unaligned
  // addresses, zero new size, overlapping MREMAP_FIXED ranges, old size 0
  // of a private mapping, a file offset that would wrap. EFAULT: the old
  // range is not inside one VMA. ENOMEM: no room (or cannot grow in place
  // without MREMAP_MAYMOVE), RLIMIT_AS.
  KResult<uintptr_t> Mremap(uintptr_t old_addr, size_t old_size,
                            size_t new_size, int flags, uintptr_t new_addr);

  // msync(2). Nothing needs writing back (a Mappable's pages are the file's
  // own page cache), so this is Linux's validation and walk: EINVAL
  // (unknown flags, MS_ASYNC with MS_SYNC, unaligned address), ENOMEM (part
  // of the range is unmapped, or the range wraps), EBUSY (MS_INVALIDATE
  // over a MAP_LOCKED mapping; there is no mlock(2) yet, so MAP_LOCKED is
  // the only way a mapping is locked).
  KResult<void> Msync(uintptr_t addr, size_t length, int flags);
  // One step of mincore(2) (do_mincore): fills vec with the residency (1 or
  // 0) of up to `max_pages` pages from `addr` (page-aligned), within the
  // VMA containing addr only, and returns how many it filled. ENOMEM if no
  // VMA contains addr. A page is resident if this mm has it backed, or, for
  // a file or shared mapping, if its Mappable holds it (Residency).
  KResult<size_t> Mincore(uintptr_t addr, size_t max_pages, uint8_t* vec);

  // ---- Resource limits (prlimit). ----
  // RLIMIT_AS: mmap, mremap, brk and stack growth fail with ENOMEM (brk:
  // returns the old break) past this many bytes of VMAs. RLIMIT_DATA:
  // brk may not grow the heap past it. UINT64_MAX = unlimited (default).
  void SetAddressSpaceLimit(uint64_t bytes);
  void SetDataLimit(uint64_t bytes);
  // Total bytes covered by VMAs (Linux's total_vm, in bytes).
  uint64_t MappedBytes();

  // ---- Set-up (loader, exec). ----
  // Sets the start of the heap; the break starts there. Called once by the
  // loader before the guest runs.
  void SetBrkStart(uintptr_t start);
  uintptr_t brk_start();
  // Where the loader put the initial argv and envp strings, and the auxv
  // it wrote (Linux mm->arg_start..env_end, saved_auxv): /proc/pid/cmdline,
  // environ, auxv. Set by the loader; copied by Fork.
  struct ProcessImage {
    uintptr_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;
    std::vector<std::pair<uint64_t, uint64_t>> auxv;  // ends with AT_NULL
    // Linux's mm->exe_file deny-write hold (loader::DenyWrite): writing the
    // executable is ETXTBSY until this image and every fork of it are gone.
    std::shared_ptr<const void> exe_denial;
    // Linux's mm->start_code/end_code/start_data/end_data (the program's
    // PT_LOAD bounds) and start_stack (where argc lies): /proc/pid/stat.
    uintptr_t start_code = 0, end_code = 0, start_data = 0, end_data = 0;
    uintptr_t start_stack = 0;
  };
  void SetProcessImage(ProcessImage image);
  ProcessImage process_image();
  // Pre-populates [addr, addr+length) (all inside VMAs), like MAP_POPULATE.
  KResult<void> Populate(uintptr_t addr, size_t length);

  // ---- Introspection (/proc, tests). ----
  std::vector<VmaInfo> Vmas();
  // The contents of /proc/pid/maps, formatted as Linux does ("[heap]",
  // "[stack]", names from column 74; device and inode 0).
  std::string MapsText();
  // Bytes of guest memory backed by pages this mm owns.
  uint64_t BackedBytes();
  // The same without any lock (the OOM killer, which may run while other
  // mm locks are held); a recent value.
  uint64_t OwnedBytesNoLock() const {
    return owned_bytes_.load(std::memory_order_relaxed);
  }
  size_t VmaCount();
  // Number of backed runs (for tests).
  size_t PmaCount();

  // MappingSpace.
  void Invalidate(uintptr_t addr, uint64_t length) override;
  void InvalidateEvenPrivate(uintptr_t addr, uint64_t length) override;

  // Limits (Linux defaults).
  static constexpr size_t kMaxMapCount = 65530;  // vm.max_map_count

 private:
  struct Vma {
    uintptr_t end = 0;
    int prot = 0;
    int max_prot = 0;
    bool shared = false;
    bool grows_down = false;
    std::shared_ptr<Mappable> mappable;  // nullptr: private anonymous
    bool anon_shared = false;  // mappable is this mapping's AnonShared
    uint64_t offset = 0;       // into mappable, for vma start
    std::string name;
    bool dont_fork = false;
    bool wipe_on_fork = false;
    bool locked = false;        // MAP_LOCKED; not inherited by fork
    uint64_t dev = 0, ino = 0;  // MmapOpts::dev/ino
  };
  struct Pma {
    uintptr_t end = 0;
    uint64_t file_offset = 0;  // MemoryFile offset of the pma's start
    bool owned = true;         // pages owned by this mm (DecRef on unmap)
    // Owned pages that may be shared with another mm since fork: writes
    // must check refs_ first (copy if still shared).
    int max_prot = PROT_READ | PROT_WRITE | PROT_EXEC;  // from Translation
    bool cow = false;
  };
  using VmaMap = std::map<uintptr_t, Vma>;  // key: start
  using PmaMap = std::map<uintptr_t, Pma>;  // key: start

  MemoryManager(std::unique_ptr<platform::AddressSpace> as,
                platform::MemoryFile& mf, const Layout& layout,
                std::shared_ptr<PageRefs> refs);

  // do_mmap()'s checks of an open file for Mmap (see MmapOpts::file):
  // returns the mapping's max prot.
  static KResult<int> CheckFileMapping(const MmapOpts& o, size_t length,
                                       bool shared, int max_prot);

  // ---- VMA helpers (mapping_mu_). ----
  // The VMA containing addr, or end().
  VmaMap::iterator FindVmaLocked(uintptr_t addr)
      ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  // Splits the VMA containing addr (if any) so that addr is a boundary.
  // Also splits pmas at addr. Returns false when the split would exceed
  // kMaxMapCount.
  void SplitVmaLocked(uintptr_t addr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mapping_mu_);
  bool RangeFreeLocked(uintptr_t start, uintptr_t end)
      ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  // Bytes of VMAs inside [start, end).
  uint64_t MappedInLocked(uintptr_t start, uintptr_t end)
      ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  // Whether `grow` more bytes of VMAs stay within RLIMIT_AS.
  bool MayExpandLocked(uint64_t grow) ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_) {
    return grow <= as_limit_ && mapped_bytes_ <= as_limit_ - grow;
  }
  // Number of VMAs after unmapping [start, end) and inserting one more.
  size_t VmaCountAfterLocked(uintptr_t start, uintptr_t end, bool insert)
      ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  KResult<uintptr_t> FindUnmappedLocked(uintptr_t hint, size_t length,
                                        bool fixed)
      ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  KResult<uintptr_t> FindGapTopDownLocked(uintptr_t low, uintptr_t high,
                                          size_t length)
      ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  KResult<uintptr_t> FindGapBottomUpLocked(uintptr_t low, uintptr_t high,
                                           size_t length)
      ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  // Removes VMAs and pmas in [start, end) (page-aligned).
  void UnmapLocked(uintptr_t start, uintptr_t end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mapping_mu_);
  // Inserts a VMA over a free range and merges it with compatible
  // neighbours.
  void InsertVmaLocked(uintptr_t start, Vma vma)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mapping_mu_);
  void MergeAroundLocked(uintptr_t addr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mapping_mu_);
  // Moves [old_addr, old_addr+old_len), inside one VMA, to the free range
  // [new_addr, new_addr+new_len), pages and all; keeps the old VMA (now
  // unbacked) if keep_old.
  void MoveLocked(uintptr_t old_addr, size_t old_len, uintptr_t new_addr,
                  size_t new_len, bool keep_old)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mapping_mu_);
  // Grows a grows-down VMA just above addr down to cover addr. Returns
  // false if there is none or the guard gap/stack limit forbids it.
  bool GrowDownLocked(uintptr_t addr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mapping_mu_);

  // ---- pma helpers (active_mu_). ----
  // Returns the pma containing `addr` (inside `vma`, which starts at
  // vma_start), backing and mapping a run of pages around it first if
  // there is none (2 MiB-aligned window, 64 KiB for grows-down VMAs,
  // bounded by the VMA and by existing pmas). With `write`, a private
  // mapping of a Mappable's page is copied first (copy on write).
  // Errors: kENOMEM, kEIO (SIGBUS-worthy: the Mappable failed).
  // The run never leaves [bound_lo, bound_hi).
  KResult<PmaMap::iterator> EnsurePmaLocked(uintptr_t vma_start, const Vma& vma,
                                            uintptr_t addr, bool write,
                                            uintptr_t bound_lo = 0,
                                            uintptr_t bound_hi = UINTPTR_MAX)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(active_mu_)
          ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  KResult<PmaMap::iterator> BreakCowLocked(uintptr_t vma_start, const Vma& vma,
                                           PmaMap::iterator pit, uintptr_t addr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(active_mu_)
          ABSL_SHARED_LOCKS_REQUIRED(mapping_mu_);
  PmaMap::iterator FindPmaLocked(uintptr_t addr)
      ABSL_SHARED_LOCKS_REQUIRED(active_mu_);
  void SplitPmaLocked(uintptr_t addr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(active_mu_);
  // Drops pmas in [start, end): unmaps them, frees owned pages.
  void DropPmasLocked(uintptr_t start, uintptr_t end, bool owned_too = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(active_mu_);
  // (Re)maps the pmas in [start, end), which lie in `vma`, with the
  // protection `vma` now gives them (unmaps them if none).
  void RemapPmasLocked(uintptr_t start, uintptr_t end, const Vma& vma)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(active_mu_);
  KResult<void> MapPmaLocked(uintptr_t start, const Pma& pma, const Vma& vma)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(active_mu_);
  // Whether a write to `pma` (in `vma`) must copy first.
  static bool NeedsCow(const Vma& vma, const Pma& pma) {
    return !vma.shared && (!pma.owned || pma.cow);
  }
  // Whether a write to `pma` must go through EnsurePmaLocked first: to copy
  // it, or to let its Mappable hear of the first write of a page it handed
  // out read-only (write-back tracking).
  static bool WriteNeedsWork(const Vma& vma, const Pma& pma) {
    return NeedsCow(vma, pma) || !(pma.max_prot & PROT_WRITE);
  }
  // The host protection a pma is mapped with.
  static int EffectiveProt(const Vma& vma, const Pma& pma) {
    int prot = vma.prot & pma.max_prot;
    if (NeedsCow(vma, pma)) prot &= ~PROT_WRITE;
    return prot;
  }

  // The common walk. `write`: guest memory is written (needs PROT_WRITE
  // unless force). fn(file_offset, offset_in_buffer, n) returns the bytes
  // it handled; `stopped`: the walk ended because fn handled fewer.
  struct WalkResult {
    size_t done = 0;
    bool stopped = false;
  };
  WalkResult WalkLoop(uintptr_t addr, size_t n, bool write, bool force,
                      absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn);
  // WalkLoop for plain copies: fn returns false on a MemoryFile failure;
  // nothing copied is EFAULT.
  KResult<size_t> CopyLoop(
      uintptr_t addr, size_t n, bool write, bool force,
      absl::FunctionRef<bool(uint64_t, size_t, size_t)> fn);

  // Window (bytes, power of two) around a fault that is populated at once.
  static constexpr size_t kFaultWindow = 2 << 20;
  static constexpr size_t kStackFaultWindow = 64 << 10;

  const std::unique_ptr<platform::AddressSpace> as_;
  platform::MemoryFile& mf_;
  const Layout layout_;
  // Shared by the fork family; immutable pointer.
  const std::shared_ptr<PageRefs> refs_;

  absl::Mutex mapping_mu_ ABSL_ACQUIRED_BEFORE(active_mu_);
  VmaMap vmas_ ABSL_GUARDED_BY(mapping_mu_);
  uintptr_t brk_start_ ABSL_GUARDED_BY(mapping_mu_) = 0;
  ProcessImage image_ ABSL_GUARDED_BY(mapping_mu_);
  // Sum of VMA lengths.
  uint64_t mapped_bytes_ ABSL_GUARDED_BY(mapping_mu_) = 0;
  uint64_t as_limit_ ABSL_GUARDED_BY(mapping_mu_) = UINT64_MAX;
  uint64_t data_limit_ ABSL_GUARDED_BY(mapping_mu_) = UINT64_MAX;
  uintptr_t brk_ ABSL_GUARDED_BY(mapping_mu_) = 0;

  absl::Mutex active_mu_ ABSL_ACQUIRED_AFTER(mapping_mu_);
  PmaMap pmas_ ABSL_GUARDED_BY(active_mu_);
  // Written under active_mu_; read without it by OwnedBytesNoLock.
  std::atomic<uint64_t> owned_bytes_{0};
};

}  // namespace sandbox::mm

#endif  // SENTRY_MM_MEMORY_MANAGER_H_
