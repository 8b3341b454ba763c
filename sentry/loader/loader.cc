#include "sentry/loader/loader.h"

#include <elf.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "sentry/mm/layout.h"
#include "sentry/vdso/vdso.h"

namespace sandbox::loader {
namespace {

using mm::kPageSize;
using mm::PageRoundDown;
using mm::PageRoundUp;

constexpr char kPlatform[] = "x86_64";
constexpr size_t kCopyChunk = 64 << 10;

int ProtFromFlags(uint32_t flags) {
  int prot = 0;
  if (flags & PF_R) prot |= PROT_READ;
  if (flags & PF_W) prot |= PROT_WRITE;
  if (flags & PF_X) prot |= PROT_EXEC;
  return prot;
}

struct Image {
  uintptr_t bias = 0;
  uintptr_t end = 0;    // page-rounded end of the highest segment
  uintptr_t entry = 0;  // e_entry + bias
  uintptr_t phdr = 0;   // AT_PHDR (0 if the headers are not mapped)
};

class Loader {
 public:
  Loader(mm::MemoryManager& mm, const LoadArgs& args, std::string* error,
         bool* committed)
      : mm_(mm),
        args_(args),
        error_(error),
        committed_(committed),
        layout_(mm.layout()) {}

  KResult<LoadResult> Run(FileReader& file);

 private:
  Errno Fail(Errno e, std::string msg) {
    if (error_ != nullptr) *error_ = std::move(msg);
    return e;
  }
  KResult<Image> MapImage(FileReader& file, const ElfInfo& info, uintptr_t bias,
                          const std::string& name);
  uint64_t file_size_ = 0;  // of the file MapImage is reading
  KResult<uintptr_t> DynBase(const ElfInfo& info);
  KResult<uintptr_t> MmapBase(const ElfInfo& info, const char* what);
  KResult<void> MapStack(bool exec, LoadResult& out);
  KResult<void> BuildStack(LoadResult& out);

  mm::MemoryManager& mm_;
  const LoadArgs& args_;
  std::string* error_;
  bool* committed_;
  const mm::Layout& layout_;
  std::vector<std::string> argv_;
};

// ELF_ET_DYN_BASE: 2/3 of the address space (DEFAULT_MAP_WINDOW / 3 * 2).
uint64_t EtDynBase(const mm::Layout& layout) { return layout.max_addr / 3 * 2; }

KResult<uintptr_t> Loader::DynBase(const ElfInfo& info) {
  // A PIE with an interpreter: ELF_ET_DYN_BASE + arch_mmap_rnd(), aligned
  // to the largest segment alignment, then ELF_PAGESTART(base - vaddr), as
  // Linux's load_elf_binary.
  uint64_t base = PageRoundDown(EtDynBase(layout_));
  if (layout_.randomize) base += (mm::RandomU64() & ((1ull << 28) - 1)) << 12;
  base &= ~(info.max_align - 1);
  const uint64_t span = info.max_vaddr - info.min_vaddr;
  if (base < layout_.min_addr || base + span < base ||
      base + span > layout_.mmap_base) {
    return Fail(kENOMEM,
                absl::StrFormat("position-independent image of %#x bytes does "
                                "not fit in the address space",
                                span));
  }
  return base - info.min_vaddr;
}

KResult<uintptr_t> Loader::MmapBase(const ElfInfo& info, const char* what) {
  // The interpreter (and an ET_DYN without PT_INTERP, e.g. ld.so run
  // directly or a static PIE: Linux 6.1's load_bias 0) goes where mmap
  // would put it (top-down below the mmap base), aligned like its segments
  // ask.
  const uint64_t span = info.max_vaddr - info.min_vaddr;
  const uint64_t pad =
      info.max_align > kPageSize ? info.max_align - kPageSize : 0;
  auto r = mm_.Mmap({.length = span + pad,
                     .prot = PROT_NONE,
                     .flags = MAP_PRIVATE | MAP_ANONYMOUS});
  if (!r.ok()) {
    return Fail(
        r.error(),
        absl::StrFormat("no room in the address space for the %s", what));
  }
  uintptr_t start = (*r + info.max_align - 1) & ~(info.max_align - 1);
  TRY_VOID(mm_.Munmap(*r, span + pad));
  if (info.ehdr.e_type == ET_EXEC) return uintptr_t{0};
  return start - info.min_vaddr;
}

KResult<Image> Loader::MapImage(FileReader& file, const ElfInfo& info,
                                uintptr_t bias, const std::string& name) {
  Image img;
  file_size_ = info.file_size;
  img.bias = bias;
  img.entry = info.ehdr.e_entry + bias;
  img.phdr = info.phdr_vaddr != 0 ? info.phdr_vaddr + bias : 0;
  const std::shared_ptr<mm::Mappable> mappable = file.GetMappable();
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < info.phdrs.size(); ++i) {
    const Elf64_Phdr& ph = info.phdrs[i];
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    const uint64_t vaddr = ph.p_vaddr + bias;
    const uint64_t start = PageRoundDown(vaddr);
    const uint64_t end_raw = vaddr + ph.p_memsz;
    if (vaddr < ph.p_vaddr || end_raw < vaddr || end_raw > layout_.max_addr ||
        start < layout_.min_addr) {
      return Fail(kENOEXEC,
                  absl::StrFormat("%s: segment %d [%#x, %#x) lies outside the "
                                  "user address space [%#x, %#x)",
                                  name, i, vaddr, end_raw, layout_.min_addr,
                                  layout_.max_addr));
    }
    const uint64_t end = PageRoundUp(end_raw);
    const uint64_t stack_low = layout_.stack_top - layout_.max_stack_size;
    if (end > stack_low - mm::kStackGuardGap && start < layout_.stack_top) {
      return Fail(kENOEXEC, absl::StrFormat(
                                "%s: segment %d [%#x, %#x) overlaps the stack",
                                name, i, start, end));
    }
    // Shown in /proc/pid/maps as the file's mapping: its device, inode and
    // the offset of the segment's first page (when page-aligned).
    const auto [dev, ino] = file.Identity();
    uint64_t shown_off = 0;
    if (ino != 0 && ph.p_offset >= vaddr - start &&
        (ph.p_offset - (vaddr - start)) % kPageSize == 0 &&
        ph.p_offset < (uint64_t{1} << 62)) {
      shown_off = ph.p_offset - (vaddr - start);
    }
    const uint64_t lead = vaddr - start;
    const uint64_t file_off = ph.p_offset - lead;
    if (mappable != nullptr && ph.p_filesz > 0 && !(ph.p_flags & PF_W)) {
      // Linux's elf_map(): the pages holding [p_offset, p_offset + p_filesz)
      // map the file privately (copy on write), so only what the program
      // touches is ever read, and pages already in the file's cache are
      // shared rather than copied. Past the file's end a page reads as
      // zeros; without bss the rest of the last page holds the file's next
      // bytes, as a file mapping shows them. Writable segments are copied
      // below instead: a program writes most of its data early
      // (relocations, Python's static objects' reference counts), and each
      // first write of a private file page would be a copy-on-write fault,
      // a round trip to the stub, where one copy at exec costs less.
      const uint64_t file_end = PageRoundUp(vaddr + ph.p_filesz);
      auto fm = mm_.Mmap({.addr = start,
                          .length = file_end - start,
                          .prot = ProtFromFlags(ph.p_flags),
                          .flags = MAP_PRIVATE | MAP_FIXED,
                          .offset = file_off,
                          .mappable = mappable,
                          .name = name,
                          .dev = dev,
                          .ino = ino});
      if (!fm.ok()) {
        return Fail(fm.error(), absl::StrFormat("%s: mapping segment %d: %s",
                                                name, i, fm.error().name()));
      }
      if (ph.p_memsz > ph.p_filesz) {
        // padzero(): the rest of the last file page is bss (a private copy
        // of that page, zeroed), then anonymous memory up to p_memsz.
        const uint64_t tail = file_end - (vaddr + ph.p_filesz);
        if (tail > 0) {
          static const uint8_t kZeros[kPageSize] = {};
          auto put = mm_.ForceCopyOut(vaddr + ph.p_filesz, kZeros, tail);
          if (!put.ok() || *put != tail) {
            return Fail(kENOMEM,
                        absl::StrFormat("%s: out of memory loading segment %d",
                                        name, i));
          }
        }
        if (end > file_end) {
          auto bm = mm_.Mmap({.addr = file_end,
                              .length = end - file_end,
                              .prot = ProtFromFlags(ph.p_flags),
                              .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                              .name = name});
          if (!bm.ok()) {
            return Fail(bm.error(),
                        absl::StrFormat("%s: mapping bss of "
                                        "segment %d: %s",
                                        name, i, bm.error().name()));
          }
        }
      }
      img.end = std::max<uintptr_t>(img.end, end);
      continue;
    }
    auto m = mm_.Mmap({.addr = start,
                       .length = end - start,
                       .prot = ProtFromFlags(ph.p_flags),
                       .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                       .offset = shown_off,
                       .name = name,
                       .dev = dev,
                       .ino = ino});
    if (!m.ok()) {
      return Fail(m.error(), absl::StrFormat("%s: mapping segment %d: %s", name,
                                             i, m.error().name()));
    }
    // Like Linux's file mapping from the page holding p_offset: the bytes
    // before the segment in its first page come from the file too.
    uint64_t file_len = lead + ph.p_filesz;
    // Without bss (p_memsz == p_filesz) the rest of the last page holds
    // the file's next bytes, as Linux's file mapping shows them; with bss
    // it is zero (padzero), as is the anonymous memory here.
    if (ph.p_memsz == ph.p_filesz) {
      const uint64_t page_end = PageRoundUp(vaddr + ph.p_filesz) - start;
      const uint64_t avail = file_size_ > file_off ? file_size_ - file_off : 0;
      file_len = std::max(file_len, std::min(page_end, avail));
    }
    buf.resize(std::min<uint64_t>(kCopyChunk, std::max<uint64_t>(file_len, 1)));
    for (uint64_t done = 0; done < file_len;) {
      const size_t k = std::min<uint64_t>(buf.size(), file_len - done);
      auto got = file.ReadAt(file_off + done, buf.data(), k);
      if (!got.ok()) {
        return Fail(got.error(), absl::StrFormat("%s: reading segment %d: %s",
                                                 name, i, got.error().name()));
      }
      if (*got != k) {
        return Fail(kENOEXEC, absl::StrFormat(
                                  "%s: file ended inside segment %d", name, i));
      }
      auto put = mm_.ForceCopyOut(start + done, buf.data(), k);
      if (!put.ok() || *put != k) {
        return Fail(
            kENOMEM,
            absl::StrFormat("%s: out of memory loading segment %d", name, i));
      }
      done += k;
    }
    img.end = std::max<uintptr_t>(img.end, end);
  }
  return img;
}

KResult<void> Loader::MapStack(bool exec, LoadResult& out) {
  out.stack_top = layout_.stack_top;
  out.stack_bottom = layout_.stack_top - layout_.max_stack_size;
  int prot = PROT_READ | PROT_WRITE | (exec ? PROT_EXEC : 0);
  auto r = mm_.Mmap({.addr = out.stack_bottom,
                     .length = layout_.max_stack_size,
                     .prot = prot,
                     .flags = MAP_PRIVATE | MAP_ANONYMOUS |
                              MAP_FIXED_NOREPLACE | MAP_GROWSDOWN,
                     .name = "[stack]"});
  if (!r.ok()) {
    return Fail(r.error(),
                absl::StrFormat("mapping the stack: %s", r.error().name()));
  }
  return OkResult();
}

KResult<void> Loader::BuildStack(LoadResult& out) {
  const std::vector<std::string>& envp = args_.envp;
  // bprm_stack_limits(): strings and pointers may use a quarter of the
  // stack limit (at most 6 MiB, at least ARG_MAX).
  uint64_t argv_bytes = 0, envp_bytes = 0;
  for (const std::string& s : argv_) {
    if (s.size() + 1 > kMaxArgStrLen) {
      return Fail(kE2BIG, "an argument is longer than MAX_ARG_STRLEN");
    }
    argv_bytes += s.size() + 1;
  }
  for (const std::string& s : envp) {
    if (s.size() + 1 > kMaxArgStrLen) {
      return Fail(kE2BIG,
                  "an environment string is longer than MAX_ARG_STRLEN");
    }
    envp_bytes += s.size() + 1;
  }
  if (args_.exec_path.size() + 1 > kMaxArgStrLen) {
    return Fail(kE2BIG, "the executable path is too long");
  }
  const uint64_t limit = std::max<uint64_t>(
      std::min<uint64_t>(6 << 20, layout_.max_stack_size / 4), kArgMax);
  const uint64_t ptr_bytes = (argv_.size() + envp.size()) * 8;
  if (ptr_bytes >= limit || argv_bytes + envp_bytes > limit - ptr_bytes) {
    return Fail(kE2BIG, "argument list too long");
  }

  const uint64_t top = out.stack_top;
  uint64_t p = top - 8;  // a zero word marks the end
  p -= args_.exec_path.size() + 1;
  out.execfn_addr = p;
  p -= argv_bytes + envp_bytes;
  out.arg_start = p;
  out.arg_end = out.env_start = p + argv_bytes;
  out.env_end = out.env_start + envp_bytes;
  if (layout_.randomize) p -= mm::RandomU64() % 8192;  // arch_align_stack()
  p &= ~uint64_t{15};
  p -= sizeof(kPlatform);
  out.platform_addr = p;
  p -= 16;
  out.random_addr = p;

  std::vector<std::pair<uint64_t, uint64_t>>& aux = out.auxv;
  aux.clear();
  if (out.vdso_base != 0) aux.push_back({AT_SYSINFO_EHDR, out.vdso_base});
  aux.insert(aux.end(), args_.extra_auxv.begin(), args_.extra_auxv.end());
  const uint64_t minsig =
      args_.minsigstksz != 0 ? args_.minsigstksz : DefaultMinSigStkSz(2688);
  aux.insert(aux.end(), {
                            {AT_MINSIGSTKSZ, minsig},
                            {AT_HWCAP, args_.hwcap},
                            {AT_PAGESZ, kPageSize},
                            {AT_CLKTCK, args_.clktck},
                            {AT_PHDR, out.phdr_addr},
                            {AT_PHENT, sizeof(Elf64_Phdr)},
                            {AT_PHNUM, out.phnum},
                            {AT_BASE, out.interp_base},
                            {AT_FLAGS, 0},
                            {AT_ENTRY, out.program_entry},
                            {AT_UID, args_.uid},
                            {AT_EUID, args_.euid},
                            {AT_GID, args_.gid},
                            {AT_EGID, args_.egid},
                            {AT_SECURE, args_.secure ? 1u : 0u},
                            {AT_RANDOM, out.random_addr},
                            {AT_HWCAP2, args_.hwcap2},
                            {AT_EXECFN, out.execfn_addr},
                            {AT_PLATFORM, out.platform_addr},
                            {AT_NULL, 0},
                        });
  const uint64_t items = argv_.size() + 1 + envp.size() + 1 + 1;
  uint64_t sp = p - aux.size() * 16;
  sp = (sp - items * 8) & ~uint64_t{15};
  if (sp < out.stack_bottom + kPageSize) {
    return Fail(kE2BIG, "arguments do not fit on the stack");
  }
  out.stack_pointer = sp;

  // Assemble [sp, top) and write it with one copy.
  std::vector<uint8_t> img(top - sp, 0);
  auto put = [&](uint64_t addr, const void* src, size_t n) {
    std::memcpy(img.data() + (addr - sp), src, n);
  };
  auto put64 = [&](uint64_t addr, uint64_t v) { put(addr, &v, 8); };
  uint64_t w = sp;
  put64(w, argv_.size());
  w += 8;
  uint64_t s = out.arg_start;
  for (const std::string& a : argv_) {
    put64(w, s);
    w += 8;
    put(s, a.c_str(), a.size() + 1);
    s += a.size() + 1;
  }
  w += 8;  // NULL
  for (const std::string& e : envp) {
    put64(w, s);
    w += 8;
    put(s, e.c_str(), e.size() + 1);
    s += e.size() + 1;
  }
  w += 8;  // NULL
  for (const auto& [k, v] : aux) {
    put64(w, k);
    put64(w + 8, v);
    w += 16;
  }
  put(out.execfn_addr, args_.exec_path.c_str(), args_.exec_path.size() + 1);
  put(out.platform_addr, kPlatform, sizeof(kPlatform));
  uint8_t rnd[16];
  mm::RandomBytes(rnd, sizeof(rnd));
  put(out.random_addr, rnd, sizeof(rnd));

  auto r = mm_.ForceCopyOut(sp, img.data(), img.size());
  if (!r.ok() || *r != img.size()) {
    return Fail(kENOMEM, "out of memory writing the initial stack");
  }
  return OkResult();
}

KResult<LoadResult> Loader::Run(FileReader& file) {
  LoadResult out;
  argv_ = args_.argv;
  if (argv_.empty()) argv_.push_back("");  // as Linux >= 5.18

  // ---- Before the point of no return (load_elf_binary up to
  // begin_new_exec): errors are returned to execve's caller. ----
  std::string why;
  auto parsed = ParseElfHeaders(file, ElfRole::kProgram, &why);
  if (!parsed.ok()) return Fail(parsed.error(), why);
  ElfInfo& info = *parsed;
  const std::string& name =
      args_.maps_name.empty() ? args_.exec_path : args_.maps_name;

  ElfInfo interp_info;
  std::unique_ptr<FileReader> interp_file;
  if (info.has_interpreter) {
    out.interpreter = info.interpreter;
    if (!args_.open_interpreter) {
      return Fail(kENOEXEC, absl::StrFormat(
                                "dynamically linked program (interpreter %s): "
                                "no way to open the interpreter",
                                info.interpreter));
    }
    // open_exec(): the walk's errors, EACCES (not a regular file, no
    // execute permission, noexec mount), ENOENT for an empty path.
    auto f = info.interpreter.empty()
                 ? KResult<std::unique_ptr<FileReader>>(kENOENT)
                 : args_.open_interpreter(info.interpreter);
    if (!f.ok()) {
      return Fail(f.error(),
                  absl::StrFormat("opening interpreter %s: %s",
                                  info.interpreter, f.error().name()));
    }
    interp_file = std::move(f).value();
    auto ip = ParseElfHeaders(*interp_file, ElfRole::kInterpreter, &why);
    if (!ip.ok()) {
      return Fail(ip.error(),
                  absl::StrFormat("interpreter %s: %s", info.interpreter, why));
    }
    interp_info = std::move(ip).value();
  }

  // ---- The point of no return (begin_new_exec). From here a failure
  // leaves `mm` half-built; execve kills the process with SIGSEGV. ----
  if (committed_ != nullptr) *committed_ = true;

  if (auto v = ValidateSegments(info, info.file_size, &why); !v.ok()) {
    return Fail(v.error(), absl::StrFormat("%s: %s", name, why));
  }
  if (interp_file != nullptr) {
    // load_elf_interp(): the type first (EINVAL), then the segments.
    if (interp_info.ehdr.e_type != ET_EXEC &&
        interp_info.ehdr.e_type != ET_DYN) {
      return Fail(kEINVAL,
                  absl::StrFormat("interpreter %s is not an executable or a "
                                  "shared object (e_type %d)",
                                  info.interpreter, interp_info.ehdr.e_type));
    }
    if (auto v = ValidateSegments(interp_info, interp_info.file_size, &why);
        !v.ok()) {
      return Fail(v.error(),
                  absl::StrFormat("interpreter %s: %s", info.interpreter, why));
    }
  }

  TRY_VOID(MapStack(info.executable_stack, out));
  out.executable_stack = info.executable_stack;

  uintptr_t bias = 0;
  const bool dyn = info.ehdr.e_type == ET_DYN;
  if (dyn && interp_file != nullptr) {
    TRY(bias, DynBase(info));
  } else if (dyn) {
    TRY(bias, MmapBase(info, "position-independent program"));
  }
  TRY(Image main, MapImage(file, info, bias, name));
  // load_elf_binary's code and data bounds (for /proc/pid/stat): the
  // executable PT_LOAD segments' [p_vaddr, p_vaddr + p_filesz) hull, and
  // the highest segment start and file end.
  uintptr_t start_code = ~uintptr_t{0}, end_code = 0;
  uintptr_t start_data = 0, end_data = 0;
  for (const Elf64_Phdr& ph : info.phdrs) {
    if (ph.p_type != PT_LOAD) continue;
    if ((ph.p_flags & PF_X) && ph.p_vaddr < start_code) start_code = ph.p_vaddr;
    start_data = std::max<uintptr_t>(start_data, ph.p_vaddr);
    const uintptr_t k = ph.p_vaddr + ph.p_filesz;
    if ((ph.p_flags & PF_X) && end_code < k) end_code = k;
    end_data = std::max<uintptr_t>(end_data, k);
  }
  out.load_bias = main.bias;
  out.program_entry = main.entry;
  out.phdr_addr = main.phdr;
  out.phnum = info.ehdr.e_phnum;
  out.entry = main.entry;

  if (interp_file != nullptr) {
    uintptr_t ibias = 0;
    if (interp_info.ehdr.e_type == ET_DYN) {
      TRY(ibias, MmapBase(interp_info, "interpreter"));
    }
    TRY(Image interp,
        MapImage(*interp_file, interp_info, ibias, info.interpreter));
    // AT_BASE: Linux's load_addr, the interpreter's load bias (its first
    // segment's page minus ELF_PAGESTART(p_vaddr)); 0 for an ET_EXEC one.
    out.interp_base = interp.bias;
    out.entry = interp.entry;
  }

  // arch_setup_additional_pages(): the vDSO and its data page, where mmap
  // puts them (below the interpreter). A failure here is past the point
  // of no return, as in Linux.
  if (args_.vdso) {
    KResult<uintptr_t> v = vdso::MapVdso(mm_);
    if (!v.ok()) {
      return Fail(v.error(),
                  absl::StrFormat("mapping the vDSO: %s", v.error().name()));
    }
    out.vdso_base = *v;
  }

  // The heap starts after the program (plus up to 32 MiB when randomising,
  // as arch_randomize_brk()). A randomised ET_DYN run without interpreter
  // (ld.so itself, a static PIE) has its heap moved to ELF_ET_DYN_BASE,
  // away from the mmap area it was loaded into, as Linux does.
  uintptr_t brk = main.end;
  if (layout_.randomize) {
    if (dyn && interp_file == nullptr) brk = PageRoundUp(EtDynBase(layout_));
    brk += (mm::RandomU64() % (32 << 20)) & ~(kPageSize - 1);
  }
  out.brk_start = brk;
  mm_.SetBrkStart(brk);

  TRY_VOID(BuildStack(out));
  mm::MemoryManager::ProcessImage image{out.arg_start, out.arg_end,
                                        out.env_start, out.env_end, out.auxv};
  image.start_code = start_code + main.bias;
  image.end_code = end_code + main.bias;
  image.start_data = start_data + main.bias;
  image.end_data = end_data + main.bias;
  image.start_stack = out.stack_pointer;
  mm_.SetProcessImage(std::move(image));
  return out;
}

}  // namespace

KResult<LoadResult> Load(mm::MemoryManager& mm, FileReader& file,
                         const LoadArgs& args, std::string* error,
                         bool* committed) {
  if (committed != nullptr) *committed = false;
  Loader loader(mm, args, error, committed);
  return loader.Run(file);
}

uint64_t HwcapFromPlatform(const platform::Platform& platform) {
  uint32_t r[4];
  platform.Cpuid(1, 0, r);
  return r[3];
}

uint64_t DefaultMinSigStkSz(size_t fp_state_size) {
  // rt_sigframe (return address, ucontext, siginfo) + the XSAVE area and
  // its FP_XSTATE_MAGIC2 trailer + 64 bytes of alignment slack.
  constexpr uint64_t kFrame = 8 + 936 + 128;
  return (kFrame + fp_state_size + 4 + 64 + 15) & ~uint64_t{15};
}

}  // namespace sandbox::loader
