#include "sentry/fs/devpts/devpts.h"

#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/fs/kernfs/kernfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::fs::devpts {
namespace {

constexpr uint32_t kTtyAuxMajor = 5;  // TTYAUX_MAJOR
constexpr uint32_t kPtmxMinor = 2;

// kstrtouint(s, base): an optional '+', digits of `base` (0: "0x" hex,
// "0" octal, else decimal), one optional trailing newline; no overflow.
bool ParseU32(std::string_view s, unsigned base, uint32_t* out) {
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (base == 0) {
    if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      s.remove_prefix(2);
    } else if (!s.empty() && s[0] == '0') {
      base = 8;
    } else {
      base = 10;
    }
  } else if (base == 16 && s.size() >= 2 && s[0] == '0' &&
             (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    if (d >= base) return false;
    v = v * base + d;
    if (v > UINT32_MAX) return false;  // ERANGE
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

// The ptmx node. Opening it would allocate a terminal pair; without
// terminals it is ENXIO (chrdev_open with no driver for the number).
class PtmxNode final : public vfs::Inode {
 public:
  PtmxNode(kernfs::Filesystem& fs, uint32_t mode)
      : vfs::Inode(fs, fs.NextIno(),
                   vfs::NewInodeAttrs{S_IFCHR | (mode & 07777), 0, 0,
                                      vfs::MakeDev(kTtyAuxMajor, kPtmxMinor)}) {
  }
  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry&,
                                              uint32_t) override {
    return kENXIO;
  }
};

}  // namespace

KResult<void> Options::Parse(std::string_view key,
                             std::optional<std::string_view> value) {
  if (key == "newinstance") {
    if (value.has_value()) return kEINVAL;  // a flag takes no value
    return OkResult();
  }
  unsigned base;
  if (key == "uid" || key == "gid" || key == "max") {
    base = 0;  // fsparam_u32
  } else if (key == "mode" || key == "ptmxmode") {
    base = 8;  // fsparam_u32oct
  } else {
    return kEINVAL;  // "Unknown parameter"
  }
  uint32_t v;
  if (!value.has_value() || !ParseU32(*value, base, &v)) return kEINVAL;
  if (key == "uid" || key == "gid") {
    if (v == UINT32_MAX) return kEINVAL;  // !uid_valid / !gid_valid
    (key == "uid" ? uid : gid) = v;
  } else if (key == "max") {
    if (v > kMaxPtys) return kEINVAL;  // "max out of range"
    max = v;
  } else {
    (key == "mode" ? mode : ptmx_mode) = v & 07777;  // S_IALLUGO
  }
  return OkResult();
}

std::string Options::Show() const {
  std::string s;
  if (uid.has_value()) absl::StrAppend(&s, "uid=", *uid, ",");
  if (gid.has_value()) absl::StrAppend(&s, "gid=", *gid, ",");
  absl::StrAppendFormat(&s, "mode=%03o,ptmxmode=%03o", mode, ptmx_mode);
  if (max < kMaxPtys) absl::StrAppend(&s, ",max=", max);
  return s;
}

std::shared_ptr<vfs::Filesystem> NewDevptsFilesystem(const Options& opts) {
  auto fs = std::make_shared<kernfs::Filesystem>("devpts", kDevptsMagic);
  // devpts_fill_super: S_IFDIR | 0755, ino 1; mknod_ptmx: ino 2.
  auto root = std::make_shared<kernfs::Dir>(*fs, 0755);
  root->Add("ptmx", std::make_shared<PtmxNode>(*fs, opts.ptmx_mode));
  fs->SetRoot(root);
  return fs;
}

KResult<void> MountDefault(vfs::MountNamespace& ns) {
  const kernel::Credentials root = kernel::Credentials::Root();
  vfs::ResolveBase base{root, ns.Root(), ns.Root()};
  KResult<vfs::VirtualDentry> point =
      vfs::Resolve(base, "/dev/pts", vfs::ResolveOptions{});
  if (!point.ok()) return point.error() == kENOENT ? OkResult() : point.error();
  if (!point->dentry->inode().IsDir()) return OkResult();
  Options o;
  o.gid = 5;  // "tty"
  o.mode = 0620;
  o.ptmx_mode = 0666;
  std::shared_ptr<vfs::Filesystem> fs = NewDevptsFilesystem(o);
  std::shared_ptr<vfs::Dentry> fs_root = fs->root();
  return vfs::Mount::Graft(
      *point, vfs::Mount::Create(std::move(fs), std::move(fs_root),
                                 vfs::kMountNoSuid | vfs::kMountNoExec,
                                 "devpts", o.Show()));
}

void Reconfigure(vfs::Filesystem& fs, const Options& opts) {
  KResult<std::shared_ptr<vfs::Inode>> ptmx = fs.root()->inode().Lookup("ptmx");
  if (!ptmx.ok()) return;
  vfs::SetAttrRequest req;
  req.mask = vfs::SetAttrRequest::kMode;
  req.mode = opts.ptmx_mode & 07777;
  (void)(*ptmx)->SetAttr(req);
}

}  // namespace sandbox::fs::devpts
