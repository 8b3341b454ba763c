// chdir, fchdir, chroot targets and getcwd.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sentry/vfs/operations.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::vfs {
namespace {

constexpr int kCapSysChroot = 18;

KResult<VirtualDentry> SearchableDir(const kernel::Credentials& creds,
                                     VirtualDentry vd) {
  if (!vd.dentry->inode().IsDir()) return kENOTDIR;
  TRY_VOID(CheckPermission(creds, kMayExec, vd.dentry->inode()));
  return vd;
}

}  // namespace

KResult<VirtualDentry> ChdirTarget(const ResolveBase& base,
                                   std::string_view path) {
  ResolveOptions opts;
  opts.must_be_dir = true;
  TRY(VirtualDentry vd, Resolve(base, path, opts));
  return SearchableDir(base.creds, std::move(vd));
}

KResult<VirtualDentry> ChrootTarget(const ResolveBase& base,
                                    std::string_view path) {
  TRY(VirtualDentry vd, ChdirTarget(base, path));
  if (!base.creds.HasCapability(kCapSysChroot)) return kEPERM;
  return vd;
}

KResult<VirtualDentry> FchdirTarget(const kernel::Credentials& creds,
                                    const VfsFile& file) {
  return SearchableDir(creds, file.vd());
}

KResult<std::string> GetCwd(const VirtualDentry& root,
                            const VirtualDentry& cwd) {
  if (cwd.dentry->IsDead()) return kENOENT;
  std::vector<std::string> names;
  VirtualDentry cur = cwd;
  bool reached_root = false;
  for (;;) {
    if (cur == root) {
      reached_root = true;
      break;
    }
    if (cur.dentry == cur.mount->root()) {
      VirtualDentry up = cur.mount->MountPoint();
      if (!up.ok()) break;  // the top of a namespace: not below root
      cur = std::move(up);
      continue;
    }
    absl::ReaderMutexLock l(&cur.dentry->fs().tree_mu());
    std::shared_ptr<Dentry> parent = cur.dentry->parent();
    if (parent == nullptr) break;
    names.push_back(cur.dentry->name());
    cur.dentry = std::move(parent);
  }
  std::string path = reached_root ? "" : "(unreachable)";
  std::reverse(names.begin(), names.end());
  for (const std::string& n : names) path += "/" + n;
  if (names.empty()) path += "/";
  return path;
}

}  // namespace sandbox::vfs

namespace sandbox::vfs {

std::string DPath(const VirtualDentry& root, const VirtualDentry& vd) {
  if (std::string n = vd.mount->fs().DName(*vd.dentry); !n.empty()) return n;
  const bool dead = vd.dentry->IsDead();
  if (vd.mount->internal()) {
    // Its path inside the mount (shm_mnt's files: "/memfd:x (deleted)").
    // One file system: each step under its tree_mu, as GetCwd walks.
    std::vector<std::string> names;
    for (std::shared_ptr<Dentry> d = vd.dentry; d != vd.mount->root();) {
      absl::ReaderMutexLock l(&d->fs().tree_mu());
      std::shared_ptr<Dentry> parent = d->parent();
      if (parent == nullptr) break;
      names.push_back(d->name());
      d = std::move(parent);
    }
    std::string path;
    for (auto it = names.rbegin(); it != names.rend(); ++it) path += "/" + *it;
    if (path.empty()) path = "/";
    return dead ? path + " (deleted)" : path;
  }
  KResult<std::string> p = GetCwd(root, vd);
  if (p.ok()) return *p;
  // A removed file: its last path, " (deleted)" appended.
  std::shared_ptr<Dentry> parent;
  std::string name;
  {
    absl::ReaderMutexLock l(&vd.dentry->fs().tree_mu());
    parent = vd.dentry->parent();
    name = vd.dentry->name();
  }
  std::string dir = "/";
  if (parent != nullptr) {
    KResult<std::string> pp = GetCwd(root, {vd.mount, parent});
    if (pp.ok()) dir = *pp;
  }
  if (dir.back() != '/') dir += '/';
  return dir + name + " (deleted)";
}

}  // namespace sandbox::vfs
