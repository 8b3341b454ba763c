#include "sentry/fs/tmpfs/filesystem_type.h"

#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace sandbox::fs::tmpfs {
namespace {

constexpr uint64_t kPageSize = 4096;

// memparse: a number with an optional K/M/G/T/P/E suffix (1024-based).
// `rest` gets what follows.
bool MemParse(absl::string_view s, uint64_t* out, absl::string_view* rest) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0) return false;
  uint64_t v = 0;
  if (!absl::SimpleAtoi(s.substr(0, i), &v)) return false;
  int shift = 0;
  if (i < s.size()) {
    switch (s[i]) {
      case 'E':
      case 'e':
        shift = 60;
        break;  // NOLINT
      case 'P':
      case 'p':
        shift = 50;
        break;  // NOLINT
      case 'T':
      case 't':
        shift = 40;
        break;  // NOLINT
      case 'G':
      case 'g':
        shift = 30;
        break;  // NOLINT
      case 'M':
      case 'm':
        shift = 20;
        break;  // NOLINT
      case 'K':
      case 'k':
        shift = 10;
        break;  // NOLINT
      default:
        break;  // NOLINT
    }
    if (shift != 0) ++i;
  }
  if (shift != 0 && (v >> (64 - shift)) != 0) return false;
  *out = v << shift;
  *rest = s.substr(i);
  return true;
}

class TmpfsType final : public vfs::FilesystemType {
 public:
  std::string_view name() const override { return "tmpfs"; }
  KResult<vfs::NewFilesystem> GetFilesystem(
      const vfs::MountContext& ctx, std::string_view source,
      std::string_view data) const override {
    (void)source;
    TRY(MountOptions o, ParseMountOptions(data, ctx.memory_file));
    return vfs::NewFilesystem{
        .fs = Filesystem::Create(ctx.memory_file, o.opts),
        .shown_options = std::move(o.shown),
        .read_only = o.read_only,
    };
  }
  KResult<bool> Reconfigure(const vfs::MountContext& ctx, vfs::Filesystem& fs,
                            std::string_view data) const override {
    (void)fs;
    TRY(MountOptions o, ParseMountOptions(data, ctx.memory_file));
    return o.read_only;
  }
};

}  // namespace

KResult<MountOptions> ParseMountOptions(std::string_view data,
                                        const platform::MemoryFile& mf) {
  MountOptions c;
  bool size_set = false;
  uint64_t size = 0;
  std::optional<uint64_t> nr_inodes;  // unset: the default
  for (absl::string_view opt :
       absl::StrSplit(absl::string_view(data.data(), data.size()), ',',
                      absl::SkipEmpty())) {
    absl::string_view key = opt, value;
    bool has_value = false;
    if (size_t eq = opt.find('='); eq != absl::string_view::npos) {
      key = opt.substr(0, eq);
      value = opt.substr(eq + 1);
      has_value = true;
    }
    if (!has_value && vfs::ParseSbFlag(std::string_view(key.data(), key.size()),
                                       &c.read_only)) {
      continue;
    }
    if (!has_value) return kEINVAL;
    absl::string_view rest;
    if (key == "size") {
      if (!MemParse(value, &size, &rest)) return kEINVAL;
      if (rest == "%") {
        uint64_t total = DefaultMaxPages(mf) * 2 * kPageSize;
        size = static_cast<uint64_t>(static_cast<unsigned __int128>(total) *
                                     size / 100);
      } else if (!rest.empty()) {
        return kEINVAL;
      }
      size_set = true;
    } else if (key == "nr_blocks") {
      uint64_t blocks;
      if (!MemParse(value, &blocks, &rest) || !rest.empty()) return kEINVAL;
      if (blocks > (~uint64_t{0} / kPageSize)) return kEINVAL;
      size = blocks * kPageSize;
      size_set = true;
    } else if (key == "nr_inodes") {
      uint64_t n;
      if (!MemParse(value, &n, &rest) || !rest.empty()) return kEINVAL;
      nr_inodes = n;
    } else if (key == "mode") {
      uint32_t mode = 0;
      if (value.empty()) return kEINVAL;
      for (char ch : value) {
        if (ch < '0' || ch > '7' || mode > (0xffffffffu >> 3)) return kEINVAL;
        mode = mode * 8 + static_cast<uint32_t>(ch - '0');
      }
      c.opts.root_mode = mode & 07777;
    } else if (key == "uid" || key == "gid") {
      uint32_t id;
      if (!absl::SimpleAtoi(value, &id) || id == 0xffffffff) return kEINVAL;
      (key == "uid" ? c.opts.root_uid : c.opts.root_gid) = id;
    } else {
      return kEINVAL;  // "tmpfs: Unknown parameter"
    }
  }
  // shmem_show_options: size and nr_inodes when not the defaults (half of
  // RAM's pages each); 0 is "unlimited".
  const uint64_t default_pages = DefaultMaxPages(mf);
  if (size_set) {
    uint64_t pages = size / kPageSize + (size % kPageSize != 0);
    c.opts.max_bytes = pages * kPageSize;
    if (pages != default_pages) {
      absl::StrAppend(&c.shown, ",size=", pages * 4, "k");
    }
  }
  if (nr_inodes) {
    c.opts.max_inodes = *nr_inodes;
    if (*nr_inodes != default_pages) {
      absl::StrAppend(&c.shown, ",nr_inodes=", *nr_inodes);
    }
  }
  if (c.opts.root_mode != 01777) {
    absl::StrAppendFormat(&c.shown, ",mode=%03o", c.opts.root_mode);
  }
  if (c.opts.root_uid != 0) absl::StrAppend(&c.shown, ",uid=", c.opts.root_uid);
  if (c.opts.root_gid != 0) absl::StrAppend(&c.shown, ",gid=", c.opts.root_gid);
  if (!c.shown.empty()) c.shown.erase(0, 1);
  return c;
}

std::unique_ptr<vfs::FilesystemType> NewFilesystemType() {
  return std::make_unique<TmpfsType>();
}

}  // namespace sandbox::fs::tmpfs
