#include "sentry/net/unix/gc.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "sentry/net/unix/endpoint.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::unix {
namespace {

struct GcState {
  absl::Mutex mu;
  // Sockets with inflight_ > 0 (gc_inflight_list).
  absl::flat_hash_set<Endpoint*> inflight ABSL_GUARDED_BY(mu);
  // Per-user descriptors in flight (user->unix_inflight).
  absl::flat_hash_map<uint32_t, int64_t> per_user ABSL_GUARDED_BY(mu);
  std::atomic<int64_t> total_files{0};    // any description
  std::atomic<int64_t> total_sockets{0};  // unix_tot_inflight
  // Whether the graph of sockets in flight may hold a cycle (Linux >= 6.10's
  // unix_graph_state: NOT_CYCLIC lets a release skip the collection).
  // Without a cycle there is no garbage, whatever is closed: every chain of
  // "X is queued in Y" ends at a socket that is not in flight, which is
  // referenced from outside, so everything on the chain is alive. Only a
  // new edge (a unix socket sent) can make a cycle: AttachRights sets this;
  // a full pass recomputes it. A pass can miss an edge whose message is
  // queued after it (attach happens first); the background collector,
  // kicked by that attach, always runs full passes, so such a cycle is
  // found and the flag set again within its schedule. Written under mu.
  std::atomic<bool> maybe_cyclic{false};
};

GcState& Gc() {
  static GcState* g = new GcState;
  return *g;
}

// The endpoint of `f` if it is a unix socket.
Endpoint* EndpointOf(const vfs::FileRef& f) {
  UnixSocket* s = AsUnixSocket(f.get());
  return s == nullptr ? nullptr : s->endpoint().get();
}

void InflightLocked(GcState& g, const vfs::FileRef& f, uint32_t uid)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g.mu) {
  if (Endpoint* ep = EndpointOf(f)) {
    if (ep->inflight_++ == 0) g.inflight.insert(ep);
    g.total_sockets.fetch_add(1, std::memory_order_relaxed);
  }
  ++g.per_user[uid];
  g.total_files.fetch_add(1, std::memory_order_relaxed);
}

void NotInflightLocked(GcState& g, const vfs::FileRef& f, uint32_t uid)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g.mu) {
  if (Endpoint* ep = EndpointOf(f)) {
    if (--ep->inflight_ == 0) g.inflight.erase(ep);
    g.total_sockets.fetch_sub(1, std::memory_order_relaxed);
  }
  auto it = g.per_user.find(uid);
  if (it != g.per_user.end() && --it->second == 0) g.per_user.erase(it);
  g.total_files.fetch_sub(1, std::memory_order_relaxed);
}

// When the last collection ended and how long it took (ns): releases
// back off while collections are expensive.
std::atomic<int64_t> g_last_gc_end{0};
std::atomic<int64_t> g_last_gc_cost{0};

// Deferred release (delayed fput): descriptions dropped while a release is
// already running on this thread wait in its list.
thread_local std::vector<vfs::FileRef>* t_pending = nullptr;
// A collection running on this thread (releases then only ask for more).
thread_local bool t_in_gc = false;
thread_local bool t_gc_again = false;
// A release inside a ReleaseFiles drain asked for a collection: it runs
// once, after the drain (a cascade of releases is one collection).
thread_local bool t_gc_wanted = false;

// Calls fn(child) for every unix socket in flight in `ep`'s queue, and for
// a listener in the queues of its pending connections (scan_children).
// Requires gc mu (the counts and the graph are stable).
template <typename F>
void ForEachChild(Endpoint& ep, F fn) {
  std::vector<EndpointRef> embryos;
  {
    absl::MutexLock l(&ep.mu_);
    for (const MessagePtr& m : ep.queue_) {
      for (const vfs::FileRef& f : m->rights) {
        if (Endpoint* c = EndpointOf(f)) fn(c);
      }
      if (m->embryo != nullptr) embryos.push_back(m->embryo);
    }
  }
  for (const EndpointRef& e : embryos) {
    absl::MutexLock l(&e->mu_);
    for (const MessagePtr& m : e->queue_) {
      for (const vfs::FileRef& f : m->rights) {
        if (Endpoint* c = EndpointOf(f)) fn(c);
      }
    }
  }
}

// Takes the in-flight descriptions out of `e`'s queue into `out`,
// un-counting them, and lists its pending connections in `embryos`.
void TakeRightsLocked(GcState& g, Endpoint& e, std::vector<vfs::FileRef>* out,
                      std::vector<EndpointRef>* embryos)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g.mu, e.mu_) {
  for (const MessagePtr& m : e.queue_) {
    for (vfs::FileRef& f : m->rights) {
      NotInflightLocked(g, f, m->rights_uid);
      out->push_back(std::move(f));
    }
    m->rights.clear();
    if (m->embryo != nullptr) embryos->push_back(m->embryo);
  }
}

// Takes every in-flight description out of `ep`'s queue (and its pending
// connections'), un-counting them. Requires gc mu.
void TakeAllRights(GcState& g, Endpoint& ep, std::vector<vfs::FileRef>* out)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g.mu) {
  std::vector<EndpointRef> embryos;
  {
    absl::MutexLock l(&ep.mu_);
    TakeRightsLocked(g, ep, out, &embryos);
  }
  std::vector<EndpointRef> nested;  // embryos have no embryos
  for (const EndpointRef& e : embryos) {
    absl::MutexLock l(&e->mu_);
    TakeRightsLocked(g, *e, out, &nested);
  }
}

// One collection pass: returns the descriptions to drop.
std::vector<vfs::FileRef> CollectPass() {
  GcState& g = Gc();
  std::vector<vfs::FileRef> garbage;
  absl::MutexLock l(&g.mu);
  // Candidates: every reference is in flight.
  absl::flat_hash_map<Endpoint*, int64_t> external;  // candidate -> refs
  for (Endpoint* ep : g.inflight) {
    long uses = ep->file_.use_count();
    if (uses > 0 && uses == ep->inflight_) external[ep] = ep->inflight_;
  }
  if (external.empty()) return garbage;
  // Remove the references held inside candidates' queues.
  for (auto& [ep, refs] : external) {
    (void)refs;
    ForEachChild(*ep, [&](Endpoint* c) {
      auto it = external.find(c);
      if (it != external.end()) --it->second;
    });
  }
  // What is referenced from outside is alive, and so is what it reaches.
  absl::flat_hash_set<Endpoint*> alive;
  std::vector<Endpoint*> work;
  for (auto& [ep, refs] : external) {
    if (refs > 0) {
      alive.insert(ep);
      work.push_back(ep);
    }
  }
  while (!work.empty()) {
    Endpoint* ep = work.back();
    work.pop_back();
    ForEachChild(*ep, [&](Endpoint* c) {
      if (external.contains(c) && alive.insert(c).second) work.push_back(c);
    });
  }
  for (auto& [ep, refs] : external) {
    (void)refs;
    if (!alive.contains(ep)) TakeAllRights(g, *ep, &garbage);
  }
  return garbage;
}

// Whether the graph of sockets in flight (an edge from each socket to the
// sockets in flight in its queue) has a cycle: an iterative depth-first
// search with colours. Requires gc mu.
bool HasCycleLocked(GcState& g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(g.mu) {
  enum Colour : uint8_t { kGrey = 1, kBlack = 2 };
  absl::flat_hash_map<Endpoint*, Colour> colour;
  struct Frame {
    Endpoint* ep;
    std::vector<Endpoint*> children;
    size_t next = 0;
  };
  for (Endpoint* root : g.inflight) {
    if (colour.contains(root)) continue;
    std::vector<Frame> stack;
    auto push = [&](Endpoint* ep) {
      colour[ep] = kGrey;
      Frame f{ep, {}, 0};
      ForEachChild(*ep, [&](Endpoint* c) { f.children.push_back(c); });
      stack.push_back(std::move(f));
    };
    push(root);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.children.size()) {
        colour[top.ep] = kBlack;
        stack.pop_back();
        continue;
      }
      Endpoint* c = top.children[top.next++];
      auto it = colour.find(c);
      if (it == colour.end()) {
        push(c);  // invalidates `top`
      } else if (it->second == kGrey) {
        return true;
      }
    }
  }
  return false;
}

// A full pass, then the graph's state for releases.
std::vector<vfs::FileRef> CollectPassAndClassify() {
  std::vector<vfs::FileRef> garbage = CollectPass();
  GcState& g = Gc();
  absl::MutexLock l(&g.mu);
  g.maybe_cyclic.store(HasCycleLocked(g), std::memory_order_relaxed);
  return garbage;
}

// The background collector (Linux >= 6.10 runs unix_gc as a work item):
// descriptors in flight become garbage when the last descriptor of a cycle
// is closed, which no socket sees, so while any unix socket is in flight a
// host thread collects now and then: soon after descriptors were sent,
// then less and less often (up to once a second) while nothing changes.
struct Background {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  bool enabled = true;
  bool kicked = false;
};

Background& Bg() {
  static Background* b = new Background;
  return *b;
}

void BackgroundLoop() {
  Background& b = Bg();
  constexpr auto kMin = std::chrono::milliseconds(20);
  constexpr auto kMax = std::chrono::milliseconds(1000);
  auto interval = kMin;
  std::unique_lock<std::mutex> l(b.mu);
  for (;;) {
    if (!b.enabled || Gc().total_sockets.load() == 0) {
      b.cv.wait(l, [&] { return b.kicked; });
      b.kicked = false;
      interval = kMin;
      continue;
    }
    if (b.cv.wait_for(l, interval, [&] { return b.kicked; })) {
      b.kicked = false;
      interval = kMin;
      continue;
    }
    if (!b.enabled) continue;
    l.unlock();
    CollectGarbage();
    l.lock();
    interval = std::min<std::chrono::milliseconds>(interval * 2, kMax);
  }
}

// Descriptors were sent: (re)start the background collector's schedule.
void KickBackground() {
  Background& b = Bg();
  std::lock_guard<std::mutex> l(b.mu);
  if (!b.started) {
    b.started = true;
    std::thread(BackgroundLoop).detach();
  }
  b.kicked = true;
  b.cv.notify_one();
}

}  // namespace

void SetBackgroundCollection(bool enabled) {
  Background& b = Bg();
  std::lock_guard<std::mutex> l(b.mu);
  b.enabled = enabled;
  b.kicked = true;
  b.cv.notify_one();
}

void ReleaseFiles(std::vector<vfs::FileRef> files) {
  if (files.empty()) return;
  if (t_pending != nullptr) {
    for (vfs::FileRef& f : files) t_pending->push_back(std::move(f));
    return;
  }
  std::vector<vfs::FileRef> pending = std::move(files);
  t_pending = &pending;
  while (!pending.empty()) {
    vfs::FileRef f = std::move(pending.back());
    pending.pop_back();
    f.reset();  // may release a socket, which appends to `pending`
  }
  t_pending = nullptr;
  if (t_gc_wanted) {
    t_gc_wanted = false;
    MaybeCollectGarbage();
  }
}

KResult<void> AttachRights(const std::vector<vfs::FileRef>& files, uint32_t uid,
                           uint64_t limit, bool privileged) {
  if (files.empty()) return OkResult();
  GcState& g = Gc();
  absl::ReleasableMutexLock l(&g.mu);
  auto it = g.per_user.find(uid);
  int64_t mine = it == g.per_user.end() ? 0 : it->second;
  if (static_cast<uint64_t>(mine) > limit && !privileged) {
    l.Release();
    return kETOOMANYREFS;
  }
  bool sockets = false;
  for (const vfs::FileRef& f : files) {
    InflightLocked(g, f, uid);
    sockets = sockets || EndpointOf(f) != nullptr;
  }
  if (sockets) g.maybe_cyclic.store(true, std::memory_order_relaxed);
  l.Release();
  if (sockets) KickBackground();
  return OkResult();
}

RightsBatch::~RightsBatch() { ReleaseFiles(Finish()); }

void RightsBatch::Add(std::vector<vfs::FileRef>&& files, uint32_t uid,
                      bool keep) {
  if (files.empty()) return;
  entries_.push_back({std::move(files), uid, keep});
  files.clear();
}

std::vector<vfs::FileRef> RightsBatch::Finish() {
  std::vector<vfs::FileRef> kept;
  if (entries_.empty()) return kept;
  std::vector<vfs::FileRef> dropped;
  {
    GcState& g = Gc();
    absl::MutexLock l(&g.mu);
    for (Entry& e : entries_) {
      for (const vfs::FileRef& f : e.files) NotInflightLocked(g, f, e.uid);
    }
  }
  for (Entry& e : entries_) {
    for (vfs::FileRef& f : e.files) {
      (e.keep ? kept : dropped).push_back(std::move(f));
    }
  }
  entries_.clear();
  ReleaseFiles(std::move(dropped));
  return kept;
}

void PeekBarrier() {
  GcState& g = Gc();
  absl::MutexLock l(&g.mu);
}

void CollectGarbage() {
  if (t_in_gc) {
    t_gc_again = true;
    return;
  }
  t_in_gc = true;
  const int64_t start = vfs::MonotonicNowNs();
  for (int round = 0; round < 1000; ++round) {
    t_gc_again = false;
    std::vector<vfs::FileRef> garbage = CollectPassAndClassify();
    bool found = !garbage.empty();
    ReleaseFiles(std::move(garbage));
    if (!found && !t_gc_again) break;
  }
  const int64_t end = vfs::MonotonicNowNs();
  g_last_gc_end.store(end, std::memory_order_relaxed);
  g_last_gc_cost.store(end - start, std::memory_order_relaxed);
  t_in_gc = false;
}

void MaybeCollectGarbage() {
  if (Gc().total_sockets.load(std::memory_order_relaxed) == 0) return;
  // No cycle in flight: a release cannot make garbage.
  if (!Gc().maybe_cyclic.load(std::memory_order_relaxed)) return;
  if (t_pending != nullptr) {
    t_gc_wanted = true;
    return;
  }
  // A release collects at once unless collections are expensive (much in
  // flight) and one just ran: then at most a tenth of the time goes to
  // them, and the background collector comes back soon (Linux >= 6.10
  // queues the collection as a work item too).
  const int64_t cost = g_last_gc_cost.load(std::memory_order_relaxed);
  if (cost > 1000000 &&
      vfs::MonotonicNowNs() - g_last_gc_end.load(std::memory_order_relaxed) <
          10 * cost) {
    KickBackground();
    return;
  }
  CollectGarbage();
}

int64_t InflightDescriptors() {
  return Gc().total_files.load(std::memory_order_relaxed);
}

int64_t InflightSockets() {
  return Gc().total_sockets.load(std::memory_order_relaxed);
}

}  // namespace sandbox::net::unix
