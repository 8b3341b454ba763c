#include "sentry/net/netlink/netlink.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <random>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/strings/str_format.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/log.h"
#include "sentry/net/netlink/message.h"
#include "sentry/net/netlink/route.h"
#include "sentry/net/proc_net.h"
#include "sentry/net/sockfs.h"
#include "sentry/net/stack/interfaces.h"

namespace sandbox::net::netlink {
namespace {

// SOL_NETLINK options (linux/netlink.h).
constexpr int kAddMembership = 1;
constexpr int kDropMembership = 2;
constexpr int kPktinfo = 3;
constexpr int kBroadcastError = 4;
constexpr int kNoEnobufs = 5;
constexpr int kListenAllNsid = 8;
constexpr int kListMemberships = 9;
constexpr int kCapAck = 10;
constexpr int kExtAck = 11;
constexpr int kGetStrictChk = 12;

constexpr int kMaxLinks = 32;  // MAX_LINKS
constexpr int kCapNetAdmin = 12;
constexpr int kCapNetBroadcast = 11;
constexpr int kCapSysAdmin = 21;
// Groups 29 and 30 of NETLINK_ROUTE (RTNLGRP_IPV4_MROUTE_R,
// RTNLGRP_IPV6_MROUTE_R) need CAP_NET_ADMIN (rtnetlink_bind).
constexpr uint64_t kRouteAdminGroups =
    (uint64_t{1} << 28) | (uint64_t{1} << 29);
// What a queued datagram costs beyond its bytes (an skb's truesize).
constexpr size_t kSkbOverhead = 576;
// SKB_WITH_OVERHEAD(32768): the most a dump datagram grows to.
constexpr size_t kMaxDumpSize = 32768 - 320;

// struct sockaddr_nl.
struct SockaddrNl {
  uint16_t family;
  uint16_t pad;
  uint32_t pid;
  uint32_t groups;
};
static_assert(sizeof(SockaddrNl) == 12);

bool Capable(const Caller& c, int cap) {
  return c.io.creds == nullptr || c.io.creds->HasCapability(cap);
}

uint32_t GroupMask(uint32_t group) {
  return (group == 0 || group > 32) ? 0 : uint32_t{1} << (group - 1);
}

SockAddr NlAddr(uint32_t pid, uint32_t groups) {
  SockaddrNl a = {AF_NETLINK, 0, pid, groups};
  return SockAddr::From(&a, sizeof(a));
}

// The sockfs inodes of the kernel's own sockets of a namespace
// (rtnetlink's and uevent's), as /proc/net/netlink lists them.
struct KernelSockets {
  uint64_t route_ino = NextSockfsIno();
  uint64_t uevent_ino = NextSockfsIno();
};

// A stand-in for %pK: a stable value per socket that is no address.
uint64_t FakeKernelPointer(uint64_t ino) {
  uint64_t x = ino * 0x9e3779b97f4a7c15ull;
  return (x ^ (x >> 29)) & 0x00000000ffffffffull;
}

// Multicasts the table's changes to the namespace's NETLINK_ROUTE
// listeners (rtnl_notify): installed once per namespace, by its first
// netlink socket.
struct RouteNotifier {
  absl::once_flag once;
  void Attach(NetNamespace& ns) {
    absl::call_once(once, [&ns] {
      NetNamespace* nsp = &ns;
      ns.Get<stack::Interfaces>().SetListener(
          [nsp](const std::vector<stack::Change>& changes) {
            std::vector<std::shared_ptr<NetlinkSocket>> socks =
                nsp->Get<PortTable>().Bound(kNetlinkRoute);
            for (const stack::Change& c : changes) {
              uint32_t group = 0;
              std::string msg = Notification(c, &group);
              for (const auto& s : socks) {
                if (s->InGroup(group)) {
                  s->Deliver(msg, 0, uint32_t{1} << (group - 1), true);
                }
              }
            }
          });
    });
  }
};

void LogProtocolOnce(int protocol) {
  static std::array<std::atomic<bool>, kMaxLinks> logged = {};
  if (protocol >= 0 && protocol < kMaxLinks &&
      !logged[protocol].exchange(true)) {
    kernel::LogUnsupported(
        "socket: netlink protocol %d is not supported "
        "(EPROTONOSUPPORT)",
        protocol);
  }
}

}  // namespace

// ---- PortTable. ----

KResult<void> PortTable::Insert(int protocol, uint32_t portid,
                                const std::shared_ptr<NetlinkSocket>& s) {
  absl::MutexLock l(&mu_);
  auto [it, inserted] = ports_.try_emplace({protocol, portid});
  if (!inserted) {
    if (!it->second.sock.expired()) return kEADDRINUSE;
  }
  it->second = {s.get(), s};
  return OkResult();
}

void PortTable::Remove(int protocol, uint32_t portid, const NetlinkSocket* s) {
  absl::MutexLock l(&mu_);
  auto it = ports_.find({protocol, portid});
  if (it != ports_.end() && it->second.raw == s) ports_.erase(it);
}

bool PortTable::Taken(int protocol, uint32_t portid) const {
  absl::MutexLock l(&mu_);
  auto it = ports_.find({protocol, portid});
  return it != ports_.end() && !it->second.sock.expired();
}

std::shared_ptr<NetlinkSocket> PortTable::Lookup(int protocol,
                                                 uint32_t portid) const {
  absl::MutexLock l(&mu_);
  auto it = ports_.find({protocol, portid});
  if (it == ports_.end()) return nullptr;
  return it->second.sock.lock();
}

std::vector<std::shared_ptr<NetlinkSocket>> PortTable::Bound(
    int protocol) const {
  std::vector<
      std::pair<std::pair<int, uint32_t>, std::shared_ptr<NetlinkSocket>>>
      v;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [key, e] : ports_) {
      if (protocol >= 0 && key.first != protocol) continue;
      if (auto s = e.sock.lock()) v.push_back({key, std::move(s)});
    }
  }
  std::sort(v.begin(), v.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::shared_ptr<NetlinkSocket>> out;
  for (auto& [key, s] : v) out.push_back(std::move(s));
  return out;
}

// ---- NetlinkSocket. ----

NetlinkSocket::NetlinkSocket(int type, int protocol, uint32_t flags,
                             const Ucred& owner, NetNamespace& ns)
    : Socket(AF_NETLINK, type, protocol, flags, owner), ns_(ns) {}

NetlinkSocket::~NetlinkSocket() {
  // No other reference exists: the lock is for the annotations.
  absl::MutexLock l(&mu_);
  if (bound_) ns_.Get<PortTable>().Remove(protocol(), portid_, this);
}

KResult<SocketRef> NetlinkSocket::Create(Caller& c, int type, int protocol,
                                         uint32_t flags) {
  if (type != SOCK_RAW && type != SOCK_DGRAM) return kESOCKTNOSUPPORT;
  if (protocol < 0 || protocol >= kMaxLinks) return kEPROTONOSUPPORT;
  if (protocol != kNetlinkRoute && protocol != kNetlinkKobjectUevent) {
    LogProtocolOnce(protocol);
    return kEPROTONOSUPPORT;
  }
  NetNamespace& ns = NamespaceOf(c);
  if (protocol == kNetlinkRoute) ns.Get<RouteNotifier>().Attach(ns);
  auto s = std::make_shared<NetlinkSocket>(type, protocol, flags, c.ucred, ns);
  s->self_ = s;
  return SocketRef(s);
}

uint32_t NetlinkSocket::ngroups() const {
  // netlink_kernel_create gives every protocol at least 32 groups.
  return protocol() == kNetlinkRoute ? kRouteGroups : 32;
}

KResult<void> NetlinkSocket::InsertLocked(uint32_t portid) {
  std::shared_ptr<NetlinkSocket> me = self_.lock();
  if (me == nullptr) return kEINVAL;
  TRY_VOID(ns_.Get<PortTable>().Insert(protocol(), portid, me));
  bound_ = true;
  portid_ = portid;
  return OkResult();
}

KResult<void> NetlinkSocket::AutobindLocked(Caller& c) {
  PortTable& t = ns_.Get<PortTable>();
  int32_t portid = c.ucred.pid;
  int32_t rover = -4096;
  thread_local std::minstd_rand rng{std::random_device{}()};
  // Linux retries without bound; 2^31 negative ids make a long search
  // impossible in practice, so a bound only guards against a bug.
  for (int tries = 0; tries < 100000; ++tries) {
    if (portid == 0 || t.Taken(protocol(), static_cast<uint32_t>(portid))) {
      if (rover == -4096) {
        // rover in [INT32_MIN, -4097].
        std::uniform_int_distribution<int64_t> d(INT32_MIN, -4097);
        rover = static_cast<int32_t>(d(rng));
      } else if (rover >= -4096) {
        rover = -4097;
      }
      portid = rover--;
      continue;
    }
    KResult<void> r = InsertLocked(static_cast<uint32_t>(portid));
    if (r.ok() || !(r.error() == kEADDRINUSE)) return r;
  }
  return kEADDRINUSE;
}

KResult<void> NetlinkSocket::Bind(Caller& c, const SockAddr& addr) {
  if (addr.len < sizeof(SockaddrNl)) return kEINVAL;
  SockaddrNl nl;
  memcpy(&nl, addr.bytes, sizeof(nl));
  if (nl.family != AF_NETLINK) return kEINVAL;
  uint64_t groups = nl.groups;
  if (ngroups() < 32) groups &= (uint64_t{1} << ngroups()) - 1;
  if (protocol() == kNetlinkRoute && (groups & kRouteAdminGroups) &&
      !Capable(c, kCapNetAdmin)) {
    return kEPERM;
  }
  absl::MutexLock l(&mu_);
  if (bound_ && nl.pid != portid_) return kEINVAL;
  if (!bound_) {
    if (nl.pid != 0) {
      TRY_VOID(InsertLocked(nl.pid));
    } else {
      TRY_VOID(AutobindLocked(c));
    }
  }
  groups_ = (groups_ & ~uint64_t{0xffffffff}) | groups;
  return OkResult();
}

KResult<void> NetlinkSocket::Connect(Caller& c, const SockAddr& addr) {
  if (addr.len < sizeof(uint16_t)) return kEINVAL;
  absl::MutexLock l(&mu_);
  if (addr.family() == AF_UNSPEC) {
    dst_portid_ = 0;
    dst_group_ = 0;
    return OkResult();
  }
  if (addr.family() != AF_NETLINK) return kEINVAL;
  if (addr.len < sizeof(SockaddrNl)) return kEINVAL;
  SockaddrNl nl;
  memcpy(&nl, addr.bytes, sizeof(nl));
  if ((nl.groups || nl.pid) && !Capable(c, kCapNetAdmin)) return kEPERM;
  if (!bound_) TRY_VOID(AutobindLocked(c));
  dst_portid_ = nl.pid;
  dst_group_ = nl.groups == 0 ? 0 : __builtin_ffs(nl.groups);
  return OkResult();
}

KResult<SockAddr> NetlinkSocket::GetSockName(Caller&) {
  absl::MutexLock l(&mu_);
  return NlAddr(portid_, static_cast<uint32_t>(groups_));
}

KResult<SockAddr> NetlinkSocket::GetPeerName(Caller&) {
  absl::MutexLock l(&mu_);
  return NlAddr(dst_portid_, GroupMask(dst_group_));
}

bool NetlinkSocket::HasRoomLocked() const { return rx_bytes_ <= rcvbuf(); }

void NetlinkSocket::EnqueueLocked(Datagram d) {
  rx_bytes_ += d.bytes.size() + kSkbOverhead;
  rx_.push_back(std::move(d));
  queue_.Notify(vfs::kPollIn | vfs::kPollRdNorm);
}

void NetlinkSocket::OverrunLocked() {
  if (!no_enobufs_ && !error_pending_) {
    error_pending_ = true;
    SetSoError(ENOBUFS);
    queue_.Notify(vfs::kPollErr);
  }
  ++drops_;
}

void NetlinkSocket::ContinueDumpLocked() {
  if (dump_rest_.empty() || rx_bytes_ > static_cast<size_t>(rcvbuf()) / 2) {
    return;
  }
  EnqueueLocked({std::move(dump_rest_.front()), 0, 0});
  dump_rest_.pop_front();
}

bool NetlinkSocket::Deliver(std::string bytes, uint32_t src_portid,
                            uint32_t group_mask, bool kernel) {
  absl::MutexLock l(&mu_);
  if (!HasRoomLocked()) {
    if (kernel || group_mask != 0) OverrunLocked();
    return false;
  }
  EnqueueLocked({std::move(bytes), src_portid, group_mask});
  return true;
}

void NetlinkSocket::KernelReceive(Caller& c, absl::Span<const uint8_t> bytes) {
  if (protocol() == kNetlinkKobjectUevent) {
    // uevent_net_rcv: injecting uevents needs CAP_SYS_ADMIN; there are no
    // listeners to give them to.
    bool admin = Capable(c, kCapSysAdmin);
    absl::MutexLock l(&mu_);
    for (const Message& m : SplitMessages(bytes)) {
      int err = 0;
      if ((m.hdr.flags & kFRequest) && m.hdr.type >= kNlmsgMinType && !admin) {
        err = EPERM;
      }
      if (!(m.hdr.flags & kFAck) && err == 0) continue;
      std::string e = ErrorMessage(
          m, err, portid_, cap_ack_,
          (ext_ack_ && err) ? "missing CAP_SYS_ADMIN capability" : nullptr);
      if (HasRoomLocked()) {
        EnqueueLocked({std::move(e), 0, 0});
      } else {
        OverrunLocked();
      }
    }
    return;
  }
  RouteRequest rq;
  rq.ifs = &ns_.Get<stack::Interfaces>();
  rq.net_admin = Capable(c, kCapNetAdmin);
  rq.uid = c.io.creds != nullptr ? c.io.creds->ruid : c.ucred.uid;
  {
    absl::MutexLock l(&mu_);
    rq.portid = portid_;
    rq.strict = strict_;
    rq.cap_ack = cap_ack_;
    rq.ext_ack = ext_ack_;
    rq.dump_running = !dump_rest_.empty();
    rq.dump_size = std::max(kDumpGoodSize, max_recvmsg_len_);
  }
  RouteResult res = HandleRoute(rq, bytes);
  absl::MutexLock l(&mu_);
  for (RouteReply& r : res.queued) {
    if (r.dump || HasRoomLocked()) {
      EnqueueLocked({std::move(r.bytes), 0, 0});
    } else {
      OverrunLocked();
    }
  }
  for (std::string& d : res.dump_rest) dump_rest_.push_back(std::move(d));
}

KResult<size_t> NetlinkSocket::SendMsg(Caller& c, MessageIo& data,
                                       SendRequest& req) {
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  size_t len = data.size();
  if (len == 0) return kENODATA;
  uint32_t dst_portid, dst_group;
  if (req.to.has_value()) {
    if (req.to->len < sizeof(SockaddrNl)) return kEINVAL;
    SockaddrNl nl;
    memcpy(&nl, req.to->bytes, sizeof(nl));
    if (nl.family != AF_NETLINK) return kEINVAL;
    dst_portid = nl.pid;
    dst_group = nl.groups == 0 ? 0 : __builtin_ffs(nl.groups);
    if ((dst_group || dst_portid) && !Capable(c, kCapNetAdmin)) return kEPERM;
  } else {
    absl::MutexLock l(&mu_);
    dst_portid = dst_portid_;
    dst_group = dst_group_;
  }
  uint32_t me;
  {
    absl::MutexLock l(&mu_);
    if (!bound_) TRY_VOID(AutobindLocked(c));
    me = portid_;
  }
  if (static_cast<int64_t>(len) > sndbuf() - 32) return kEMSGSIZE;
  std::vector<uint8_t> buf(len);
  TRY(size_t got, data.CopyIn(0, absl::MakeSpan(buf)));
  if (got < len) return kEFAULT;

  PortTable& table = ns_.Get<PortTable>();
  if (dst_group != 0) {
    // netlink_broadcast: every other bound listener of the group.
    std::string bytes(buf.begin(), buf.end());
    for (const auto& s : table.Bound(protocol())) {
      if (s.get() == this || s->portid() == me) continue;
      if (!s->InGroup(dst_group)) continue;
      s->Deliver(bytes, me, GroupMask(dst_group), false);
    }
  }
  if (dst_portid == 0) {
    KernelReceive(c, buf);
    return len;
  }
  std::shared_ptr<NetlinkSocket> peer = table.Lookup(protocol(), dst_portid);
  if (peer == nullptr) return kECONNREFUSED;
  std::string bytes(buf.begin(), buf.end());
  if (peer->Deliver(bytes, me, 0, false)) return len;
  // netlink_attachskb: a full receiver makes a user sender wait for room.
  if (nonblocking() || (req.flags & MSG_DONTWAIT)) return kEAGAIN;
  int64_t deadline = SendDeadline();
  if (c.deadline_ns >= 0 && (deadline < 0 || c.deadline_ns < deadline)) {
    deadline = c.deadline_ns;
  }
  vfs::ThreadWaiter w;
  peer->queue_.Register(&w, vfs::kPollOut);
  for (;;) {
    if (peer->Deliver(bytes, me, 0, false)) return len;
    vfs::WakeReason why = w.Sleep(c.io.interrupt_fd, deadline);
    if (why == vfs::WakeReason::kInterrupted) {
      return deadline < 0 ? kERestartSys : kEINTR;
    }
    if (why == vfs::WakeReason::kTimedOut) return kEAGAIN;
  }
}

KResult<size_t> NetlinkSocket::RecvMsg(Caller& c, MessageIo& data,
                                       RecvRequest& req) {
  if (req.flags & MSG_OOB) return kEOPNOTSUPP;
  bool peek = req.flags & MSG_PEEK;
  vfs::ThreadWaiter w;
  bool registered = false;
  int64_t deadline = -2;  // not computed yet
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (error_pending_) {
        // skb_recv_datagram reports sk_err before any queued datagram.
        error_pending_ = false;
        int e = TakeSoError();
        if (e != 0) return Errno(e);
      }
      if (!rx_.empty()) {
        Datagram d = peek ? rx_.front() : std::move(rx_.front());
        if (!peek) {
          rx_.pop_front();
          rx_bytes_ -= d.bytes.size() + kSkbOverhead;
        }
        size_t size = data.size();
        max_recvmsg_len_ =
            std::min(std::max(max_recvmsg_len_, size), kMaxDumpSize);
        size_t n = std::min(size, d.bytes.size());
        if (d.bytes.size() > size) req.msg_flags |= MSG_TRUNC;
        req.from = NlAddr(d.src_portid, d.group_mask);
        if (passcred()) req.control.creds = Ucred{};
        ContinueDumpLocked();
        if (!peek) queue_.Notify(vfs::kPollOut | vfs::kPollWrNorm);
        KResult<size_t> copied = data.CopyOut(
            0, absl::MakeConstSpan(
                   reinterpret_cast<const uint8_t*>(d.bytes.data()), n));
        if (!copied.ok()) return copied.error();
        if (*copied < n) return kEFAULT;
        return (req.flags & MSG_TRUNC) ? d.bytes.size() : n;
      }
    }
    if (nonblocking() || (req.flags & MSG_DONTWAIT)) return kEAGAIN;
    if (deadline == -2) {
      deadline = RecvDeadline();
      if (c.deadline_ns >= 0 && (deadline < 0 || c.deadline_ns < deadline)) {
        deadline = c.deadline_ns;
      }
    }
    if (!registered) {
      queue_.Register(&w, vfs::kPollIn | vfs::kPollErr);
      registered = true;
      continue;  // re-check after registering: no lost wake-up
    }
    vfs::WakeReason why = w.Sleep(c.io.interrupt_fd, deadline);
    if (why == vfs::WakeReason::kInterrupted) {
      return deadline < 0 ? kERestartSys : kEINTR;
    }
    if (why == vfs::WakeReason::kTimedOut) return kEAGAIN;
  }
}

KResult<void> NetlinkSocket::SetSockOpt(Caller& c, int level, int name,
                                        absl::Span<const uint8_t> val) {
  if (level != kSolNetlink) return Socket::SetSockOpt(c, level, name, val);
  // Linux reads an int when at least one is given, else uses 0.
  uint32_t v = 0;
  if (val.size() >= sizeof(v)) memcpy(&v, val.data(), sizeof(v));
  absl::MutexLock l(&mu_);
  switch (name) {
    case kAddMembership:
    case kDropMembership: {
      if (v == 0 || v - 1 >= ngroups()) return kEINVAL;
      uint64_t bit = uint64_t{1} << (v - 1);
      if (name == kAddMembership) {
        if (protocol() == kNetlinkRoute && (bit & kRouteAdminGroups) &&
            !Capable(c, kCapNetAdmin)) {
          return kEPERM;
        }
        groups_ |= bit;
      } else {
        groups_ &= ~bit;
      }
      return OkResult();
    }
    case kPktinfo:
      pktinfo_ = v != 0;
      return OkResult();
    case kBroadcastError:
      broadcast_error_ = v != 0;
      return OkResult();
    case kNoEnobufs:
      no_enobufs_ = v != 0;
      return OkResult();
    case kListenAllNsid:
      if (!Capable(c, kCapNetBroadcast)) return kEPERM;
      // One namespace: nothing arrives from another, so there is no
      // NETLINK_LISTEN_ALL_NSID control message to give; accepted as
      // Linux accepts it.
      return OkResult();
    case kCapAck:
      cap_ack_ = v != 0;
      return OkResult();
    case kExtAck:
      ext_ack_ = v != 0;
      return OkResult();
    case kGetStrictChk:
      strict_ = v != 0;
      return OkResult();
    default:
      return kENOPROTOOPT;
  }
}

KResult<size_t> NetlinkSocket::GetSockOpt(Caller& c, int level, int name,
                                          absl::Span<uint8_t> val) {
  if (level != kSolNetlink) return Socket::GetSockOpt(c, level, name, val);
  absl::MutexLock l(&mu_);
  bool flag;
  switch (name) {
    case kListMemberships: {
      // The group words that fit; Linux reports the size it would need
      // (ALIGN(BITS_TO_BYTES(ngroups), 4)) in optlen, this returns the
      // bytes written (never more than the buffer).
      size_t need = ((ngroups() + 7) / 8 + 3) & ~size_t{3};
      size_t pos = 0;
      for (; pos * 8 < ngroups(); pos += 4) {
        if (val.size() - pos < 4 || val.size() < pos) break;
        uint32_t word = static_cast<uint32_t>(groups_ >> (pos * 8));
        memcpy(val.data() + pos, &word, 4);
      }
      return std::min(need, val.size());
    }
    case kPktinfo:
      flag = pktinfo_;
      break;
    case kBroadcastError:
      flag = broadcast_error_;
      break;
    case kNoEnobufs:
      flag = no_enobufs_;
      break;
    case kListenAllNsid:
      flag = false;
      break;
    case kCapAck:
      flag = cap_ack_;
      break;
    case kExtAck:
      flag = ext_ack_;
      break;
    case kGetStrictChk:
      flag = strict_;
      break;
    default:
      return kENOPROTOOPT;
  }
  if (val.size() < sizeof(int)) return kEINVAL;
  int v = flag ? 1 : 0;
  memcpy(val.data(), &v, sizeof(v));
  return sizeof(v);
}

uint32_t NetlinkSocket::Readiness(uint32_t mask) {
  absl::MutexLock l(&mu_);
  // datagram_poll: writable while the send buffer has room (a send never
  // holds buffer space here).
  uint32_t r = vfs::kPollOut | vfs::kPollWrNorm | vfs::kPollWrBand;
  if (!rx_.empty()) r |= vfs::kPollIn | vfs::kPollRdNorm;
  if (error_pending_) r |= vfs::kPollErr;
  return r & mask;
}

void NetlinkSocket::EventRegister(vfs::WaitEntry* e, uint32_t mask) {
  queue_.Register(e, mask);
}

uint32_t NetlinkSocket::portid() {
  absl::MutexLock l(&mu_);
  return portid_;
}

bool NetlinkSocket::InGroup(uint32_t group) {
  absl::MutexLock l(&mu_);
  return group >= 1 && group <= 64 && ((groups_ >> (group - 1)) & 1);
}

std::string NetlinkSocket::ProcLine() {
  absl::MutexLock l(&mu_);
  return absl::StrFormat(
      "%016x %-3d %-10u %08x %-8d %-8d %-5d %-8d %-8u "
      "%-8u\n",
      FakeKernelPointer(ino()), protocol(), portid_,
      static_cast<uint32_t>(groups_), rx_bytes_, 0, dump_rest_.empty() ? 0 : 1,
      2, drops_, ino());
}

std::string ProcNetNetlink(NetNamespace& ns) {
  std::string out(kProcNetNetlinkHeader);
  KernelSockets& k = ns.Get<KernelSockets>();
  auto kernel_line = [&](int protocol, uint64_t ino) {
    absl::StrAppendFormat(&out,
                          "%016x %-3d %-10u %08x %-8d %-8d %-5d %-8d %-8u "
                          "%-8u\n",
                          FakeKernelPointer(ino), protocol, 0, 0, 0, 0, 0, 2, 0,
                          ino);
  };
  std::vector<std::shared_ptr<NetlinkSocket>> socks =
      ns.Get<PortTable>().Bound(-1);
  for (int protocol : {kNetlinkRoute, kNetlinkKobjectUevent}) {
    kernel_line(protocol,
                protocol == kNetlinkRoute ? k.route_ino : k.uevent_ino);
    for (const auto& s : socks) {
      if (s->protocol() == protocol) out += s->ProcLine();
    }
  }
  return out;
}

void Register() {
  Family f;
  f.domain = AF_NETLINK;
  f.name = "netlink";
  f.create = &NetlinkSocket::Create;
  RegisterFamily(f);
  RegisterProcNetFile("netlink", ProcNetNetlink);
}

}  // namespace sandbox::net::netlink
