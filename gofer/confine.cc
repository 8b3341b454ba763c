#include "gofer/confine.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gofer/protocol/unique_fd.h"
#include "gofer/server/node.h"
#include "hostconfine/capabilities.h"

namespace gofer {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::ErrnoToStatus(errno, what);
}

constexpr unsigned long kMountFlags = MS_NODEV | MS_NOSUID;

// Opens target (a relative path) beneath root without following any
// symlink or crossing a mount, one component at a time.
absl::Status OpenTarget(int root, const std::string& target, UniqueFd* out) {
  int err = OpenPathBeneath(root, target, out);
  if (err != 0) {
    return absl::ErrnoToStatus(err, absl::StrCat("open mount target ", target));
  }
  return absl::OkStatus();
}

// Writes content to a /proc/self file (uid_map, gid_map, setgroups).
absl::Status WriteProcFile(const char* path, const std::string& content) {
  UniqueFd fd(open(path, O_WRONLY | O_CLOEXEC));
  if (!fd.valid() || write(fd.get(), content.data(), content.size()) !=
                         static_cast<ssize_t>(content.size())) {
    return Errno(absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

// Step 0: a user namespace in which the caller's uid and gid are 0.
absl::Status EnterUserNamespace() {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  // A process that changed its uid is not dumpable, and its /proc/self
  // files then belong to root: make it dumpable to write its own maps.
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return Errno("PR_SET_DUMPABLE");
  if (unshare(CLONE_NEWUSER) != 0) return Errno("unshare(NEWUSER)");
  absl::Status s = WriteProcFile("/proc/self/setgroups", "deny");
  if (s.ok())
    s = WriteProcFile("/proc/self/uid_map", absl::StrCat("0 ", uid, " 1"));
  if (s.ok())
    s = WriteProcFile("/proc/self/gid_map", absl::StrCat("0 ", gid, " 1"));
  return s;
}

// Undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' &&
        s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 +
                                      (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// After a recursive bind at `dir`: detaches every submount below it that
// may be detached (deepest first). Locked ones (EINVAL/EPERM) stay; no walk
// crosses into them (RESOLVE_NO_XDEV).
void DetachUnlockedSubmounts(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<std::string> below;
  std::string line;
  const std::string prefix = dir + "/";
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    if (!(fields >> id >> parent >> devno >> root >> point)) continue;
    point = Unescape(point);
    if (point.compare(0, prefix.size(), prefix) == 0) below.push_back(point);
  }
  std::sort(below.begin(), below.end(),
            [](const std::string& a, const std::string& b) {
              return std::count(a.begin(), a.end(), '/') >
                     std::count(b.begin(), b.end(), '/');
            });
  for (const std::string& p : below) umount2(p.c_str(), MNT_DETACH);
}

// A host mount (a /proc/self/mountinfo line, unescaped).
struct HostMount {
  std::string id, parent, dev, root, point;
};

// The host's mounts, read before anything is mounted in the new
// namespace.
std::vector<HostMount> HostMounts() {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<HostMount> mounts;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    HostMount m;
    if (!(fields >> m.id >> m.parent >> m.dev >> m.root >> m.point)) continue;
    m.root = Unescape(m.root);
    m.point = Unescape(m.point);
    mounts.push_back(std::move(m));
  }
  return mounts;
}

// `path` below `dir` ("" for dir itself), or nullopt.
std::optional<std::string> Below(const std::string& path,
                                 const std::string& dir) {
  if (path == dir) return std::string();
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return path.substr(prefix.size());
}

// Whether `m` binds its parent mount's own directory at its mount point
// onto itself (same file system, same directory: Bazel's sandbox, for one,
// re-binds writable directories so): it covers nothing and shows nothing
// else than the directory under it, so it is served as that directory.
bool IsSelfBind(const HostMount& m, const std::vector<HostMount>& all) {
  for (const HostMount& p : all) {
    if (p.id != m.parent || p.dev != m.dev) continue;
    std::optional<std::string> rel = Below(m.point, p.point);
    if (!rel) return false;
    std::string want = p.root;
    if (!rel->empty()) want = (want == "/" ? "/" : want + "/") + *rel;
    return m.root == want;
  }
  return false;
}

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// The entries to hide below the served directory `dir` (canonical): the
// mount points strictly below it but self-binds, relative to it, plus
// `extra`; none below
// another (unreachable anyway), at most kMaxHidden.
constexpr size_t kMaxHidden = 4096;
std::vector<std::string> HiddenBelow(const std::vector<HostMount>& mounts,
                                     const std::string& dir,
                                     std::vector<std::string> extra) {
  std::vector<std::string> rel = std::move(extra);
  for (const HostMount& m : mounts) {
    std::optional<std::string> r = Below(m.point, dir);
    if (!r || r->empty() || IsSelfBind(m, mounts)) continue;
    rel.push_back(*r);
  }
  std::sort(rel.begin(), rel.end());
  std::vector<std::string> kept;
  for (const std::string& r : rel) {
    if (r.empty() || r.back() == '/') continue;
    if (!kept.empty() && (r == kept.back() ||
                          (r.size() > kept.back().size() &&
                           r.compare(0, kept.back().size(), kept.back()) == 0 &&
                           r[kept.back().size()] == '/'))) {
      continue;  // the same, or below a hidden one
    }
    if (kept.size() == kMaxHidden) break;
    kept.push_back(r);
  }
  return kept;
}

// Builds *hidden (server/hidden.h) for the trees served from `trees` (the
// new root and the volumes, as bound in the new namespace) with `rels[i]`
// to hide below trees[i]: one stand-in each (an empty directory, or an
// empty file for a file mount point) on a read-only tmpfs mounted at
// `dir`, reachable afterwards only through the stand-ins' descriptors.
absl::Status MakeHidden(const std::string& dir, const std::vector<int>& trees,
                        const std::vector<std::vector<std::string>>& rels,
                        std::shared_ptr<Hidden>* hidden) {
  size_t total = 0;
  for (const auto& r : rels) total += r.size();
  if (mkdir(dir.c_str(), 0700) != 0) return Errno("mkdir stand-in directory");
  std::string opts = absl::StrCat("size=4k,mode=0755,nr_inodes=", total + 16);
  if (mount("gofer-hidden", dir.c_str(), "tmpfs", kMountFlags | MS_NOEXEC,
            opts.c_str()) != 0) {
    return Errno("mount stand-in tmpfs");
  }
  UniqueFd base(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!base.valid()) return Errno("open stand-in tmpfs");
  struct Pending {
    uint64_t parent_dev, parent_ino;
    std::string name;
    bool has_self;
    uint64_t dev, ino;
    std::string stand_in;
  };
  std::vector<Pending> pending;
  for (size_t t = 0; t < trees.size(); ++t) {
    for (const std::string& rel : rels[t]) {
      size_t slash = rel.rfind('/');
      std::string parent_rel =
          slash == std::string::npos ? "" : rel.substr(0, slash);
      std::string name =
          slash == std::string::npos ? rel : rel.substr(slash + 1);
      UniqueFd parent;
      struct stat pst, st;
      if (ValidateName(name) != 0 ||
          OpenPathBeneath(trees[t], parent_rel, &parent) != 0 ||
          fstat(parent.get(), &pst) != 0) {
        continue;  // not in the served tree (below a host mount)
      }
      Pending p{static_cast<uint64_t>(pst.st_dev),
                static_cast<uint64_t>(pst.st_ino),
                name,
                false,
                0,
                0,
                absl::StrCat(pending.size())};
      bool is_dir = true;
      int fd = OpenBeneath(parent.get(), name, O_PATH | O_NOFOLLOW, 0);
      if (fd >= 0) {
        UniqueFd child(fd);
        if (fstat(fd, &st) != 0) return Errno("fstat hidden entry");
        // A symlink (a host's /run -> /var/run) is served as itself: the
        // sandbox resolves it in its own tree. Mount points are never one.
        if (S_ISLNK(st.st_mode)) continue;
        p.has_self = true;
        p.dev = st.st_dev;
        p.ino = st.st_ino;
        is_dir = S_ISDIR(st.st_mode);
      } else if (fd != -EXDEV) {
        continue;  // ENOENT: nothing there to hide
      }
      if (is_dir) {
        if (mkdirat(base.get(), p.stand_in.c_str(), 0755) != 0) {
          return Errno("mkdir stand-in");
        }
      } else {
        std::string path = absl::StrCat(dir, "/", p.stand_in);
        UniqueFd f(
            open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644));
        if (!f.valid()) return Errno("create stand-in");
      }
      pending.push_back(std::move(p));
    }
  }
  if (mkdirat(base.get(), "fallback", 0755) != 0) {
    return Errno("mkdir stand-in");
  }
  if (mount(nullptr, dir.c_str(), nullptr,
            MS_REMOUNT | MS_BIND | MS_RDONLY | kMountFlags | MS_NOEXEC,
            nullptr) != 0) {
    return Errno("remount stand-in tmpfs read-only");
  }
  auto parent_fd = std::make_shared<const UniqueFd>(std::move(base));
  auto stand_in = [&](const std::string& name,
                      std::shared_ptr<const StandIn>* out) -> absl::Status {
    int fd = OpenBeneath(parent_fd->get(), name, O_PATH | O_NOFOLLOW, 0);
    if (fd < 0) {
      return absl::ErrnoToStatus(-fd, "open stand-in");
    }
    auto s = std::make_shared<StandIn>();
    s->fd = std::make_shared<const UniqueFd>(fd);
    s->parent_fd = parent_fd;
    s->name = name;
    *out = std::move(s);
    return absl::OkStatus();
  };
  auto h = std::make_shared<Hidden>();
  for (const Pending& p : pending) {
    std::shared_ptr<const StandIn> s;
    absl::Status st = stand_in(p.stand_in, &s);
    if (!st.ok()) return st;
    h->Add(p.parent_dev, p.parent_ino, p.name, p.has_self, p.dev, p.ino,
           std::move(s));
  }
  std::shared_ptr<const StandIn> fallback;
  absl::Status st = stand_in("fallback", &fallback);
  if (!st.ok()) return st;
  h->set_fallback(std::move(fallback));
  *hidden = std::move(h);
  return absl::OkStatus();
}

}  // namespace

absl::Status DropCapabilities(bool keep_chown) {
  // DAC_OVERRIDE and DAC_READ_SEARCH: the guest's root reads and writes
  // what the host's root may; FOWNER: chmod and utimes of files not the
  // Gofer's. CAP_FSETID is never kept: without it the host clears S_ISUID
  // and S_ISGID on every write and chown by the Gofer, as for any user.
  constexpr int kKeep[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};
  uint64_t keep = 0;
  for (int c : kKeep) keep |= uint64_t{1} << c;
  // Only ":suid" connections give files owners other than the Gofer's.
  if (keep_chown) keep |= uint64_t{1} << CAP_CHOWN;
  return sandbox::hostconfine::DropCapabilitiesExcept(keep);
}

absl::Status Confine(const ConfineOptions& options,
                     std::vector<UniqueFd>* volume_roots,
                     std::shared_ptr<const Hidden>* hidden) {
  if (options.root.empty() || options.root[0] != '/') {
    return absl::InvalidArgumentError("root must be an absolute path");
  }
  // What not to serve (hidden.h), from the host's mounts as they are now,
  // before any is added or moved in the new namespace: the mount points
  // below each served tree, and the host root's /tmp and /run (host
  // scratch and runtime state, which the sandbox has its own of).
  std::vector<std::vector<std::string>> hidden_rels;
  {
    const std::vector<HostMount> points = HostMounts();
    const std::string root = Canonical(options.root);
    std::vector<std::string> extra;
    if (root == "/") extra = {"tmp", "run"};
    hidden_rels.push_back(HiddenBelow(points, root, std::move(extra)));
    for (const Volume& v : options.volumes) {
      hidden_rels.push_back(HiddenBelow(points, Canonical(v.source), {}));
    }
  }
  if (options.user_namespace) {
    absl::Status s = EnterUserNamespace();
    if (!s.ok()) return s;
  }
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET) != 0) {
    return Errno("unshare(NEWNS|NEWIPC|NEWUTS|NEWNET)");
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return Errno("make / rslave");
  }
  // Everything named by the (trusted) configuration is opened now, before
  // the staging mount below may hide it.
  UniqueFd host_root(
      open(options.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!host_root.valid()) return Errno(absl::StrCat("open ", options.root));
  std::vector<UniqueFd> sources;
  for (const BindMount& m : options.submounts) {
    sources.emplace_back(open(m.source.c_str(), O_PATH | O_CLOEXEC));
    if (!sources.back().valid()) return Errno(absl::StrCat("open ", m.source));
  }
  std::vector<UniqueFd> volume_sources;
  for (const Volume& v : options.volumes) {
    volume_sources.emplace_back(
        open(v.source.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!volume_sources.back().valid()) {
      return Errno(absl::StrCat("open ", v.source));
    }
  }
  // A private tmpfs to build the new root in (pivot_root needs the new
  // root to be a mount point other than the current root, which a bind of
  // "/" onto itself is not). It is detached with the old root.
  const char* staging = nullptr;
  for (const char* dir : {"/tmp", "/mnt", "/run", "/var"}) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      staging = dir;
      break;
    }
  }
  if (staging == nullptr) return absl::NotFoundError("no staging directory");
  if (mount("gofer-staging", staging, "tmpfs", kMountFlags | MS_NOEXEC,
            "size=16k,mode=0700") != 0) {
    return Errno(absl::StrCat("mount staging tmpfs on ", staging));
  }
  std::string new_root = absl::StrCat(staging, "/root");
  if (mkdir(new_root.c_str(), 0700) != 0) return Errno("mkdir staging root");
  // Non-recursive: the host's submounts below root do not come along.
  std::string from = absl::StrCat("/proc/self/fd/", host_root.get());
  if (mount(from.c_str(), new_root.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    // EINVAL: submounts locked by a less privileged user namespace, which
    // may not be uncovered. Bind them too; they stay unreachable, since no
    // walk crosses a mount point (RESOLVE_NO_XDEV, node.h).
    if (errno != EINVAL || mount(from.c_str(), new_root.c_str(), nullptr,
                                 MS_BIND | MS_REC, nullptr) != 0) {
      return Errno(absl::StrCat("bind ", options.root));
    }
    DetachUnlockedSubmounts(new_root);
  }
  host_root.reset();
  UniqueFd root(open(new_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return Errno(absl::StrCat("open ", new_root));
  for (size_t i = 0; i < options.submounts.size(); ++i) {
    const BindMount& m = options.submounts[i];
    UniqueFd target;
    absl::Status s = OpenTarget(root.get(), m.target, &target);
    if (!s.ok()) return s;
    std::string from = absl::StrCat("/proc/self/fd/", sources[i].get());
    std::string where = absl::StrCat("/proc/self/fd/", target.get());
    if (mount(from.c_str(), where.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Errno(absl::StrCat("bind ", m.source, " on ", m.target));
    }
  }
  sources.clear();
  // Volumes: bound in the staging tmpfs (outside the new root), remounted
  // nodev/nosuid(/ro), then held only by an O_PATH descriptor.
  std::vector<UniqueFd> volumes;
  for (size_t i = 0; i < options.volumes.size(); ++i) {
    std::string dir = absl::StrCat(staging, "/volume", i);
    if (mkdir(dir.c_str(), 0700) != 0) return Errno("mkdir staging volume");
    std::string from = absl::StrCat("/proc/self/fd/", volume_sources[i].get());
    if (mount(from.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Errno(absl::StrCat("bind volume ", options.volumes[i].source));
    }
    unsigned long flags = MS_REMOUNT | MS_BIND | kMountFlags;
    if (options.volumes[i].read_only) flags |= MS_RDONLY;
    if (mount(nullptr, dir.c_str(), nullptr, flags, nullptr) != 0) {
      return Errno(absl::StrCat("remount volume ", options.volumes[i].source));
    }
    volumes.emplace_back(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!volumes.back().valid()) return Errno("open volume");
  }
  volume_sources.clear();
  {
    std::vector<int> trees = {root.get()};
    for (const UniqueFd& v : volumes) trees.push_back(v.get());
    std::shared_ptr<Hidden> h;
    absl::Status s =
        MakeHidden(absl::StrCat(staging, "/hidden"), trees, hidden_rels, &h);
    if (!s.ok()) return s;
    if (hidden != nullptr) *hidden = std::move(h);
  }
  if (fchdir(root.get()) != 0) return Errno("fchdir root");
  // nodev, nosuid (and ro) on every mount. Not noexec: the Sentry maps
  // donated FDs of guest binaries PROT_EXEC.
  auto remount = [](const std::string& path, bool ro) -> absl::Status {
    unsigned long flags = MS_REMOUNT | MS_BIND | kMountFlags;
    if (ro) flags |= MS_RDONLY;
    if (mount(nullptr, path.c_str(), nullptr, flags, nullptr) != 0) {
      return Errno(absl::StrCat("remount ", path));
    }
    return absl::OkStatus();
  };
  // Each submount is reached again the same symlink-free way; the path
  // lookup now ends on the mount's root, which the remount applies to.
  for (const BindMount& m : options.submounts) {
    UniqueFd target;
    absl::Status s = OpenTarget(root.get(), m.target, &target);
    if (!s.ok()) return s;
    s = remount(absl::StrCat("/proc/self/fd/", target.get()), m.read_only);
    if (!s.ok()) return s;
  }
  absl::Status s = remount(".", options.root_read_only);
  if (!s.ok()) return s;
  // pivot_root(".", "."): stacks the old root on top of the new one; the
  // detach below removes it.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach old root");
  if (chdir("/") != 0 || chroot("/") != 0) return Errno("chroot /");
  s = DropCapabilities(options.keep_chown);
  if (s.ok() && volume_roots != nullptr) *volume_roots = std::move(volumes);
  return s;
}

}  // namespace gofer
