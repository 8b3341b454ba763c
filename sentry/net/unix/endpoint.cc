#include "sentry/net/unix/endpoint.h"

#include <errno.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <utility>

#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/unix/gc.h"
#include "sentry/net/unix/registry.h"

namespace sandbox::net::unix {
namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_open{0};

// kmalloc's size classes for a linear skb buffer.
size_t KmallocSize(size_t n) {
  if (n <= 8) return 8;
  size_t p = 8;
  while (p < n) {
    // 96 and 192 are kmalloc classes too.
    if (p == 64 && n <= 96) return 96;
    if (p == 128 && n <= 192) return 192;
    p <<= 1;
  }
  return p;
}

}  // namespace

int64_t TrueSize(size_t len) {
  // SKB_TRUESIZE: SKB_DATA_ALIGN(sizeof(sk_buff)) (256) plus the kmalloc'd
  // head (data aligned to 64 + skb_shared_info, 320) and page frags for
  // what does not fit in a one-page head (SKB_MAX_HEAD(0) = 3776).
  constexpr size_t kSkb = 256, kShinfo = 320, kMaxHead = 3776, kPage = 4096;
  size_t head = len <= kMaxHead ? len : kMaxHead;
  size_t frags = len - head;
  size_t t = kSkb + KmallocSize(((head + 63) & ~size_t{63}) + kShinfo) +
             ((frags + kPage - 1) & ~(kPage - 1));
  return static_cast<int64_t>(t);
}

Message::~Message() {
  // Rights are taken out (and un-counted) before a Message is destroyed;
  // dropping them here would run a release under the caller's locks.
  if (!rights.empty()) {
    RightsBatch b;
    b.Add(std::move(rights), rights_uid, /*keep=*/false);
  }
  if (sender != nullptr && truesize != 0) sender->WmemFree(truesize);
}

Endpoint::Endpoint(int type, NetNamespace& ns) : type_(type), netns_(ns) {
  backlog_ = ns.sysctl().max_dgram_qlen.load(std::memory_order_relaxed);
  g_live.fetch_add(1, std::memory_order_relaxed);
  g_open.fetch_add(1, std::memory_order_relaxed);
}

Endpoint::~Endpoint() {
  // Never released (a connection that failed before it was queued):
  // unlisted here.
  if (!dead_) {
    netns_.Get<SocketList>().Remove(this);
    g_open.fetch_sub(1, std::memory_order_relaxed);
  }
  g_live.fetch_sub(1, std::memory_order_relaxed);
}

std::shared_ptr<const Address> Endpoint::address() const {
  absl::MutexLock l(&mu_);
  return addr_;
}

void Endpoint::WmemFree(int64_t truesize) {
  int64_t now = wmem_.fetch_sub(truesize, std::memory_order_acq_rel) - truesize;
  if (now * 4 <= sndbuf_.load(std::memory_order_relaxed)) {
    wq_.Notify(vfs::kPollOut | vfs::kPollWrNorm | vfs::kPollWrBand);
  }
}

void Endpoint::RoomLocked() {
  peer_wait_.Notify(vfs::kPollOut | vfs::kPollWrNorm | vfs::kPollWrBand);
  if (room_waiters_.empty()) return;
  for (const std::weak_ptr<Endpoint>& w : room_waiters_) {
    if (EndpointRef s = w.lock()) {
      s->wq_.Notify(vfs::kPollOut | vfs::kPollWrNorm | vfs::kPollWrBand);
    }
  }
  room_waiters_.clear();
}

void Endpoint::Release(bool embryo) {
  RightsBatch batch;  // destroyed last, with no lock held
  std::deque<MessagePtr> flushed;
  EndpointRef skpair;
  std::shared_ptr<const Address> addr;
  State state;
  {
    absl::MutexLock l(&mu_);
    if (dead_) return;
    dead_ = true;
    shutdown_ = kShutdownMask;
    state = state_;
    state_ = State::kClose;
    skpair = std::move(peer_);
    peer_ = nullptr;
    sock_ = nullptr;
    addr = addr_;
    flushed.swap(queue_);
    room_waiters_.clear();
  }
  // Leave the name tables (only the socket that bound the name is in them).
  if (addr != nullptr) {
    if (addr->name.abstract) {
      netns_.Get<AbstractNames>().Remove(addr->name.bytes, type_, this);
    } else if (addr->node.ok()) {
      RemovePathBinding(&addr->node.dentry->inode(), this);
    }
  }
  netns_.Get<SocketList>().Remove(this);
  g_open.fetch_sub(1, std::memory_order_relaxed);

  wq_.Notify(vfs::kAllEvents);
  peer_wait_.Notify(vfs::kAllEvents);
  if (skpair != nullptr && connection_based()) {
    {
      absl::MutexLock l(&skpair->mu_);
      skpair->shutdown_ = kShutdownMask;
      if (!flushed.empty() || embryo) skpair->err_ = ECONNRESET;
    }
    skpair->wq_.Notify(vfs::kAllEvents);
  }
  skpair.reset();

  std::vector<EndpointRef> embryos;
  for (MessagePtr& m : flushed) {
    batch.Add(std::move(m->rights), m->rights_uid, /*keep=*/false);
    if (state == State::kListen && m->embryo != nullptr) {
      embryos.push_back(std::move(m->embryo));
    }
  }
  flushed.clear();  // un-charges the senders
  for (const EndpointRef& e : embryos) e->Release(/*embryo=*/true);
  embryos.clear();
  batch.Finish();
  MaybeCollectGarbage();
}

// (The implementation is outside the analysis: the order is by address.)
LockPair::LockPair(Endpoint& a, Endpoint& b) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (&a == &b) {
    first_ = &a.mu_;
    second_ = nullptr;
  } else if (&a < &b) {
    first_ = &a.mu_;
    second_ = &b.mu_;
  } else {
    first_ = &b.mu_;
    second_ = &a.mu_;
  }
  first_->Lock();
  if (second_ != nullptr) second_->Lock();
}

LockPair::~LockPair() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (second_ != nullptr) second_->Unlock();
  first_->Unlock();
}

Ucred SenderCreds(const Caller& c) {
  Ucred u = c.ucred;
  if (c.io.creds != nullptr) {
    u.uid = c.io.creds->ruid;
    u.gid = c.io.creds->rgid;
  }
  return u;
}

uint64_t NofileLimit(const Caller& c) {
  if (c.task == nullptr) return abi::kRlimInfinity;
  return c.task->thread_group().GetLimit(RLIMIT_NOFILE).rlim_cur;
}

bool MayExceedInflight(const Caller& c) {
  if (c.io.creds == nullptr) return true;
  return c.io.creds->HasCapability(kernel::kCapSysResource) ||
         c.io.creds->HasCapability(kernel::kCapSysAdmin);
}

bool PasscredEnabledLocked(UnixSocket& self, Endpoint& other) {
  if (self.passcred()) return true;
  return other.sock_ == nullptr || other.sock_->passcred();
}

int64_t LiveEndpoints() { return g_live.load(std::memory_order_relaxed); }
int64_t OpenEndpoints() { return g_open.load(std::memory_order_relaxed); }

}  // namespace sandbox::net::unix
