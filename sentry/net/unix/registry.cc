#include "sentry/net/unix/registry.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <random>

#include "sentry/kernel/task.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::net::unix {
namespace {

// The path bindings: inode -> socket (bsd_socket_buckets).
struct PathTable {
  absl::Mutex mu;
  absl::flat_hash_map<const vfs::Inode*, std::weak_ptr<Endpoint>> map
      ABSL_GUARDED_BY(mu);
};

PathTable& Paths() {
  static PathTable* t = new PathTable;
  return *t;
}

std::atomic<const PathContext*> g_test_fs{nullptr};

}  // namespace

KResult<void> AbstractNames::Insert(const Name& name, const EndpointRef& ep) {
  absl::MutexLock l(&mu_);
  auto [it, inserted] = names_.try_emplace({ep->type(), name.bytes}, ep);
  if (!inserted) {
    if (!it->second.expired()) return kEADDRINUSE;
    it->second = ep;
  }
  return OkResult();
}

KResult<Name> AbstractNames::InsertAutobind(const EndpointRef& ep) {
  static std::atomic<uint32_t> seed{std::random_device{}()};
  uint32_t ordernum = seed.fetch_add(0x9e3779b9u, std::memory_order_relaxed);
  uint32_t lastnum = ordernum & 0xfffff;
  absl::MutexLock l(&mu_);
  for (;;) {
    ordernum = (ordernum + 1) & 0xfffff;
    Name n = AutobindName(ordernum);
    auto [it, inserted] = names_.try_emplace({ep->type(), n.bytes}, ep);
    if (inserted) return n;
    if (it->second.expired()) {
      it->second = ep;
      return n;
    }
    if (ordernum == lastnum) return kENOSPC;
  }
}

EndpointRef AbstractNames::Find(const std::string& name, int type) {
  absl::MutexLock l(&mu_);
  auto it = names_.find(std::make_pair(type, name));
  if (it == names_.end()) return nullptr;
  return it->second.lock();
}

void AbstractNames::Remove(const std::string& name, int type,
                           const Endpoint* ep) {
  absl::MutexLock l(&mu_);
  auto it = names_.find(std::make_pair(type, name));
  if (it == names_.end()) return;
  EndpointRef cur = it->second.lock();
  if (cur == nullptr || cur.get() == ep) names_.erase(it);
}

void SocketList::Add(Endpoint* ep) {
  absl::MutexLock l(&mu_);
  list_[ep] = next_++;
}

void SocketList::Remove(Endpoint* ep) {
  absl::MutexLock l(&mu_);
  list_.erase(ep);
}

std::vector<EndpointRef> SocketList::Snapshot() {
  std::vector<std::pair<uint64_t, EndpointRef>> v;
  {
    absl::MutexLock l(&mu_);
    v.reserve(list_.size());
    for (const auto& [ep, seq] : list_) {
      // A listed Endpoint is alive or blocked in its destructor on mu_
      // (then lock() fails).
      EndpointRef r = ep->weak_from_this().lock();
      if (r != nullptr) v.emplace_back(seq, std::move(r));
    }
  }
  std::sort(v.begin(), v.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<EndpointRef> out;
  out.reserve(v.size());
  for (auto& [seq, r] : v) out.push_back(std::move(r));
  return out;
}

void InsertPathBinding(const vfs::Inode* inode, const EndpointRef& ep) {
  PathTable& t = Paths();
  absl::MutexLock l(&t.mu);
  t.map[inode] = ep;
}

void RemovePathBinding(const vfs::Inode* inode, const Endpoint* ep) {
  PathTable& t = Paths();
  absl::MutexLock l(&t.mu);
  auto it = t.map.find(inode);
  if (it == t.map.end()) return;
  EndpointRef cur = it->second.lock();
  if (cur == nullptr || cur.get() == ep) t.map.erase(it);
}

KResult<PathContext> PathContextOf(const Caller& c) {
  if (c.task == nullptr) {
    const PathContext* t = g_test_fs.load(std::memory_order_acquire);
    if (t == nullptr) return kENOENT;
    return *t;
  }
  PathContext pc;
  pc.creds = &c.task->creds();
  vfs::FsContext& fs = c.task->fs();
  fs.RootAndCwd(&pc.root, &pc.cwd);
  if (!pc.root.ok()) return kENOENT;
  pc.umask = fs.umask();
  return pc;
}

KResult<vfs::VirtualDentry> CreateSocketNode(
    const PathContext& pc, const std::string& path,
    const std::function<KResult<void>()>& check, HostBind* host) {
  // kern_path_create + vfs_mknod, as vfs::MknodAt, keeping the new node.
  vfs::ResolveBase base = pc.base();
  vfs::PathWalker w(base, 0);
  KResult<void> r = w.Start(path, /*allow_empty=*/false);
  if (r.ok()) r = w.WalkParent();
  if (!r.ok()) return r.error();
  if (w.last_type() != vfs::LastType::kNormal) return kEADDRINUSE;
  const vfs::VirtualDentry& dir = w.dir();
  absl::MutexLock l(&dir.dentry->fs().tree_mu());
  if (dir.dentry->dead()) return kENOENT;
  if (w.last().size() > vfs::kNameMax) return kENAMETOOLONG;
  KResult<std::shared_ptr<vfs::Dentry>> found =
      dir.dentry->LookupChild(w.last());
  if (found.ok()) return kEADDRINUSE;
  if (found.error() != kENOENT) return found.error();
  if (w.trailing_slash()) return kENOENT;
  if (dir.mount->read_only()) return kEROFS;
  TRY_VOID(vfs::CheckPermission(*pc.creds, vfs::kMayWrite | vfs::kMayExec,
                                dir.dentry->inode()));
  TRY_VOID(check());
  vfs::Inode& di = dir.dentry->inode();
  vfs::NewInodeAttrs a =
      vfs::InitOwner(*pc.creds, di.Attrs(), S_IFSOCK | (0777 & ~pc.umask));
  if (vfs::HostSockets* hs = di.fs().host_sockets();
      hs != nullptr && host != nullptr) {
    // A ":uds" mount: the Gofer makes the host socket and its node.
    TRY(hostunix::HostBinding b,
        hostunix::BindHost(*hs, di, w.last(), a, host->type, host->guest_addr));
    host->endpoint = std::move(b.endpoint);
  } else {
    TRY_VOID(di.CreateChild(w.last(), a, {}));
  }
  TRY(std::shared_ptr<vfs::Dentry> d, dir.dentry->LookupChild(w.last()));
  return vfs::VirtualDentry{dir.mount, std::move(d)};
}

KResult<EndpointRef> FindPathPeer(const PathContext& pc,
                                  const std::string& path, int type,
                                  HostPeer* host) {
  vfs::ResolveOptions opts;
  opts.follow_final = true;
  TRY(vfs::VirtualDentry vd, vfs::Resolve(pc.base(), path, opts));
  vfs::Inode& inode = vd.dentry->inode();
  TRY_VOID(vfs::CheckPermission(*pc.creds, vfs::kMayWrite, inode));
  if (inode.type() != S_IFSOCK) return kECONNREFUSED;
  EndpointRef ep;
  {
    PathTable& t = Paths();
    absl::MutexLock l(&t.mu);
    auto it = t.map.find(&inode);
    if (it != t.map.end()) ep = it->second.lock();
  }
  if (ep == nullptr) {
    vfs::HostSockets* hs = inode.fs().host_sockets();
    if (hs == nullptr || host == nullptr) return kECONNREFUSED;
    // A host socket node: the caller connects through the Gofer.
    host->sockets = hs;
    host->node = std::move(vd);
    return EndpointRef();
  }
  if (ep->type() != type) return kEPROTOTYPE;
  return ep;
}

KResult<EndpointRef> FindPeer(const Caller& c, NetNamespace& ns,
                              const Name& name, int type, HostPeer* host) {
  if (!name.abstract) {
    TRY(PathContext pc, PathContextOf(c));
    return FindPathPeer(pc, name.bytes, type, host);
  }
  EndpointRef ep = ns.Get<AbstractNames>().Find(name.bytes, type);
  if (ep == nullptr) return kECONNREFUSED;
  return ep;
}

namespace testing {

ScopedFs::ScopedFs(PathContext pc) : pc_(std::move(pc)) {
  prev_ = g_test_fs.exchange(&pc_, std::memory_order_acq_rel);
}

ScopedFs::~ScopedFs() { g_test_fs.store(prev_, std::memory_order_release); }

}  // namespace testing

}  // namespace sandbox::net::unix
