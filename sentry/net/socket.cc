#include "sentry/net/socket.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>

#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/namespace.h"
#include "sentry/net/sockfs.h"
#include "sentry/net/stack/ifioctl.h"
#include "sentry/net/stack/interfaces.h"

namespace sandbox::net {

namespace {

// SOL_SOCKET option names (asm-generic/socket.h; some are newer than the C
// library's headers).
enum SoName : int {
  kSoDebug = 1,
  kSoReuseaddr = 2,
  kSoType = 3,
  kSoError = 4,
  kSoDontroute = 5,
  kSoBroadcast = 6,
  kSoSndbuf = 7,
  kSoRcvbuf = 8,
  kSoKeepalive = 9,
  kSoOobinline = 10,
  kSoNoCheck = 11,
  kSoPriority = 12,
  kSoLinger = 13,
  kSoBsdcompat = 14,
  kSoReuseport = 15,
  kSoPasscred = 16,
  kSoPeercred = 17,
  kSoRcvlowat = 18,
  kSoSndlowat = 19,
  kSoRcvtimeoOld = 20,
  kSoSndtimeoOld = 21,
  kSoBindtodevice = 25,
  kSoAttachFilter = 26,
  kSoGetFilter = 26,
  kSoDetachFilter = 27,
  kSoPeername = 28,
  kSoTimestampOld = 29,
  kSoAcceptconn = 30,
  kSoPeersec = 31,
  kSoSndbufforce = 32,
  kSoRcvbufforce = 33,
  kSoPasssec = 34,
  kSoTimestampnsOld = 35,
  kSoMark = 36,
  kSoTimestampingOld = 37,
  kSoProtocol = 38,
  kSoDomain = 39,
  kSoRxqOvfl = 40,
  kSoWifiStatus = 41,
  kSoPeekOff = 42,
  kSoNofcs = 43,
  kSoLockFilter = 44,
  kSoSelectErrQueue = 45,
  kSoBusyPoll = 46,
  kSoMaxPacingRate = 47,
  kSoBpfExtensions = 48,
  kSoIncomingCpu = 49,
  kSoCnxAdvice = 53,
  kSoCookie = 57,
  kSoPeergroups = 59,
  kSoZerocopy = 60,
  kSoTxtime = 61,
  kSoBindtoifindex = 62,
  kSoTimestampNew = 63,
  kSoTimestampnsNew = 64,
  kSoTimestampingNew = 65,
  kSoRcvtimeoNew = 66,
  kSoSndtimeoNew = 67,
  kSoPreferBusyPoll = 69,
  kSoNetnsCookie = 71,
  kSoBufLock = 72,
  kSoReserveMem = 73,
  kSoTxrehash = 74,
  kSoRcvmark = 75,
  kSoPasspidfd = 76,
  kSoRcvpriority = 82,
  kSoPassrights = 83,
};

// Linux's jiffies as the socket timeouts count them. The host's HZ is a
// build option (100, 250, 300 or 1000); 250 is the common distribution
// choice, and only sub-4 ms values round differently.
constexpr int64_t kHz = 250;
constexpr int64_t kMaxScheduleTimeout = INT64_MAX;  // LONG_MAX
constexpr int64_t kUsecPerSec = 1000000;
constexpr int kSockMinRcvbuf = 2304;  // SOCK_MIN_RCVBUF (2048 + sk_buff)
constexpr int kSockMinSndbuf = 2 * kSockMinRcvbuf;       // SOCK_MIN_SNDBUF
constexpr int kSockSndbufLock = 1, kSockRcvbufLock = 2;  // sk_userlocks
constexpr int kSockBufLockMask = kSockSndbufLock | kSockRcvbufLock;
constexpr int kTcPrioInteractive = 6;  // TC_PRIO_INTERACTIVE
constexpr uint32_t kSofTimestampingMask = (1u << 19) - 1;
constexpr size_t kIfNamSiz = 16;
constexpr int kCapNetAdmin = 12, kCapNetRaw = 13;
// cred_to_ucred of a socket without a peer: overflowuid/overflowgid.
constexpr uint32_t kOverflowId = 65534;

std::atomic<uint64_t> next_cookie{1};  // sock_gen_cookie's counter

}  // namespace

// The SOL_SOCKET state that only getsockopt reads back (Linux's sock flags
// and fields of the same names).
struct Socket::Stored {
  bool debug = false, reuseaddr = false, dontroute = false, broadcast = false;
  bool keepalive = false, oobinline = false, no_check = false;
  bool passsec = false, passpidfd = false, passrights = true;
  bool rcvtstamp = false, rcvtstampns = false, tstamp_new = false;
  bool rxq_ovfl = false, wifi_status = false, nofcs = false;
  bool select_err_queue = false, lock_filter = false, rcvmark = false;
  bool rcvpriority = false, prefer_busy_poll = false, linger = false;
  bool reuseport = false;
  int userlocks = 0;
  int priority = 0;
  uint32_t mark = 0;
  int rcvlowat = 1;
  int64_t lingertime = 0;  // jiffies
  uint32_t tsflags = 0;
  int busy_poll = 0;
  int incoming_cpu = -1;
  uint64_t max_pacing_rate = ~uint64_t{0};
  int bound_dev_if = 0;
  uint64_t cookie = 0;
};

namespace {

// sockopt_ns_capable: a caller without credentials (tests) has them all.
bool Capable(const Caller& c, int cap) {
  return c.io.creds == nullptr || c.io.creds->HasCapability(cap);
}

NetSysctls& SysctlsOf(const Caller& c) {
  return (c.netns != nullptr ? *c.netns : NetNamespace::Root()).sysctl();
}

// sk_may_scm_recv: SO_PASSCRED and SO_PASSSEC are for AF_UNIX and
// AF_NETLINK (and Bluetooth) sockets only since Linux 6.16.
bool MayScmRecv(int family) {
  return family == AF_UNIX || family == AF_NETLINK || family == AF_BLUETOOTH;
}

// SO_BINDTODEVICE's view of the caller's interface table
// (dev_get_by_name / netdev_get_name): 0 or "" when there is none.
stack::Interfaces& InterfacesOf(const Caller& c) {
  return (c.netns != nullptr ? *c.netns : NetNamespace::Root())
      .Get<stack::Interfaces>();
}
int IfIndexByName(const Caller& c, const char* name) {
  std::optional<stack::Link> l = InterfacesOf(c).LinkByName(name);
  return l.has_value() ? l->index : 0;
}
std::string IfNameByIndex(const Caller& c, int index) {
  std::optional<stack::Link> l = InterfacesOf(c).LinkByIndex(index);
  return l.has_value() ? l->name : std::string();
}

// Copies `v` (lv bytes) into the option buffer, truncated to its size as
// sk_getsockopt does (len = min(len, lv)).
size_t PutOpt(absl::Span<uint8_t> out, const void* v, size_t lv) {
  size_t n = std::min(out.size(), lv);
  memcpy(out.data(), v, n);
  return n;
}
size_t PutInt(absl::Span<uint8_t> out, int v) {
  return PutOpt(out, &v, sizeof(v));
}

// sock_set_timeout: `old` is struct timeval (SO_*TIMEO_OLD), else
// struct __kernel_sock_timeval (two 64-bit fields; the same layout on
// x86-64).
KResult<int64_t> TimeoutFromUser(absl::Span<const uint8_t> val) {
  struct {
    int64_t sec, usec;
  } tv;
  if (val.size() < sizeof(tv)) return kEINVAL;
  memcpy(&tv, val.data(), sizeof(tv));
  if (tv.usec < 0 || tv.usec >= kUsecPerSec) return kEDOM;
  if (tv.sec < 0) return int64_t{0};
  int64_t j = kMaxScheduleTimeout;
  if ((tv.sec != 0 || tv.usec != 0) && tv.sec < kMaxScheduleTimeout / kHz - 1) {
    j = tv.sec * kHz + (tv.usec + kUsecPerSec / kHz - 1) / (kUsecPerSec / kHz);
  }
  return j;
}

// sock_get_timeout.
size_t TimeoutToUser(int64_t j, absl::Span<uint8_t> out) {
  struct {
    int64_t sec, usec;
  } tv = {0, 0};
  if (j != kMaxScheduleTimeout) {
    tv.sec = j / kHz;
    tv.usec = (j % kHz) * kUsecPerSec / kHz;
  }
  return PutOpt(out, &tv, sizeof(tv));
}

int64_t DeadlineOf(int64_t jiffies) {
  if (jiffies == kMaxScheduleTimeout) return -1;
  const int64_t ns_per_jiffy = 1000000000 / kHz;
  if (jiffies > (INT64_MAX / 2) / ns_per_jiffy) return -1;
  return vfs::MonotonicNowNs() + jiffies * ns_per_jiffy;
}

}  // namespace

Caller CallerOf(kernel::Task& t) {
  Caller c;
  c.io = t.io_context();
  c.task = &t;
  const kernel::Credentials& cr = t.creds();
  c.ucred = {static_cast<int32_t>(t.thread_group().tgid()), cr.euid, cr.egid};
  c.netns = &NetNamespace::Root();
  return c;
}

Caller CurrentCaller(const vfs::IoContext& ctx) {
  kernel::Task* t = kernel::Task::Current();
  Caller c;
  if (t != nullptr) c = CallerOf(*t);
  c.io = ctx;
  c.netns = &NetNamespace::Root();
  return c;
}

Socket::Socket(int family, int type, int protocol, uint32_t flags,
               const Ucred& owner)
    : vfs::FileDescription(flags),
      family_(family),
      type_(type),
      protocol_(protocol),
      location_(NewSocketInode(owner.uid, owner.gid)),
      ino_(location_.dentry->inode().ino()),
      rcvtimeo_(kMaxScheduleTimeout),
      sndtimeo_(kMaxScheduleTimeout),
      stored_(std::make_unique<Stored>()) {
  NetSysctls& s = NetNamespace::Root().sysctl();
  sndbuf_ = s.wmem_default.load();
  rcvbuf_ = s.rmem_default.load();
}

void Socket::InheritOptions(const Socket& listener) {
  int64_t sndbuf, rcvbuf, rcvtimeo, sndtimeo;
  bool passcred;
  Stored stored;
  {
    absl::ReaderMutexLock l(&listener.opt_mu_);
    sndbuf = listener.sndbuf_;
    rcvbuf = listener.rcvbuf_;
    rcvtimeo = listener.rcvtimeo_;
    sndtimeo = listener.sndtimeo_;
    passcred = listener.passcred_;
    stored = *listener.stored_;
  }
  stored.cookie = 0;  // sock_gen_cookie gives the clone its own
  // The child's sk_priority is the SYN's (tcp_v4_syn_recv_sock), which
  // is 0 here whatever either side set, as Linux shows over loopback.
  stored.priority = 0;
  absl::MutexLock l(&opt_mu_);
  sndbuf_ = sndbuf;
  rcvbuf_ = rcvbuf;
  rcvtimeo_ = rcvtimeo;
  sndtimeo_ = sndtimeo;
  passcred_ = passcred;
  *stored_ = stored;
}

Socket::~Socket() = default;

KResult<void> Socket::Bind(Caller&, const SockAddr&) { return kEOPNOTSUPP; }
KResult<void> Socket::Listen(Caller&, int) { return kEOPNOTSUPP; }
KResult<vfs::FileRef> Socket::Accept(Caller&, uint32_t, SockAddr*) {
  return kEOPNOTSUPP;
}
KResult<void> Socket::Connect(Caller&, const SockAddr&) { return kEOPNOTSUPP; }
KResult<SockAddr> Socket::GetSockName(Caller&) { return kEOPNOTSUPP; }
KResult<SockAddr> Socket::GetPeerName(Caller&) { return kEOPNOTSUPP; }
KResult<void> Socket::Shutdown(Caller&, int) { return kEOPNOTSUPP; }
KResult<size_t> Socket::SendMsg(Caller&, MessageIo&, SendRequest&) {
  return kEOPNOTSUPP;
}
KResult<size_t> Socket::RecvMsg(Caller&, MessageIo&, RecvRequest&) {
  return kEOPNOTSUPP;
}

KResult<void> Socket::SetSockOpt(Caller& c, int level, int name,
                                 absl::Span<const uint8_t> val) {
  if (level != SOL_SOCKET) return kEOPNOTSUPP;
  return SetSolSocket(c, name, val);
}

KResult<size_t> Socket::GetSockOpt(Caller& c, int level, int name,
                                   absl::Span<uint8_t> val) {
  if (level != SOL_SOCKET) return kEOPNOTSUPP;
  return GetSolSocket(c, name, val);
}

// sk_setsockopt.
KResult<void> Socket::SetSolSocket(Caller& c, int name,
                                   absl::Span<const uint8_t> val) {
  if (name == kSoBindtodevice) {  // sock_setbindtodevice: no int needed
    char dev[kIfNamSiz] = {};
    if (!val.empty()) {
      memcpy(dev, val.data(), std::min(val.size(), kIfNamSiz - 1));
    }
    int index = 0;
    if (dev[0] != '\0') {
      index = IfIndexByName(c, dev);
      if (index == 0) return kENODEV;
    }
    absl::MutexLock l(&opt_mu_);
    if (stored_->bound_dev_if != 0 && !Capable(c, kCapNetRaw)) return kEPERM;
    stored_->bound_dev_if = index;
    return OkResult();
  }
  if (val.size() < sizeof(int)) return kEINVAL;
  int v;
  memcpy(&v, val.data(), sizeof(v));
  const bool b = v != 0;
  NetSysctls& sys = SysctlsOf(c);

  absl::MutexLock l(&opt_mu_);
  Stored& st = *stored_;
  switch (name) {
    case kSoPriority:
      if ((v < 0 || v > kTcPrioInteractive) && !Capable(c, kCapNetRaw) &&
          !Capable(c, kCapNetAdmin)) {
        return kEPERM;
      }
      st.priority = v;
      return OkResult();
    case kSoType:
    case kSoProtocol:
    case kSoDomain:
    case kSoError:
      return kENOPROTOOPT;
    case kSoBusyPoll:
      if (v < 0) return kEINVAL;
      st.busy_poll = v;
      return OkResult();
    case kSoPreferBusyPoll:
      if (b && !Capable(c, kCapNetAdmin)) return kEPERM;
      st.prefer_busy_poll = b;
      return OkResult();
    case kSoMaxPacingRate: {
      uint64_t rate = v == -1 ? ~uint64_t{0} : static_cast<uint32_t>(v);
      if (val.size() >= sizeof(rate)) memcpy(&rate, val.data(), sizeof(rate));
      st.max_pacing_rate = rate;
      return OkResult();
    }
    case kSoTxrehash:
      // Only the Internet families have a hash to redo.
      return kEOPNOTSUPP;
    case kSoPeekOff:
      return kEOPNOTSUPP;  // no set_peek_off (families override)
    case kSoDebug:
      if (v != 0 && !Capable(c, kCapNetAdmin)) return kEACCES;
      st.debug = b;
      return OkResult();
    case kSoReuseaddr:
      st.reuseaddr = b;
      return OkResult();
    case kSoReuseport:
      if (b && family_ != AF_INET && family_ != AF_INET6) return kEOPNOTSUPP;
      st.reuseport = b;
      return OkResult();
    case kSoDontroute:
      st.dontroute = b;
      return OkResult();
    case kSoBroadcast:
      st.broadcast = b;
      return OkResult();
    case kSoSndbuf:
    case kSoSndbufforce: {
      int64_t x;
      if (name == kSoSndbuf) {
        x = std::min<uint64_t>(static_cast<uint32_t>(v), sys.wmem_max.load());
      } else {
        if (!Capable(c, kCapNetAdmin)) return kEPERM;
        x = std::max(v, 0);
      }
      x = std::min<int64_t>(x, INT32_MAX / 2);
      st.userlocks |= kSockSndbufLock;
      sndbuf_ = std::max<int64_t>(x * 2, kSockMinSndbuf);
      return OkResult();
    }
    case kSoRcvbuf:
    case kSoRcvbufforce: {
      int64_t x;
      if (name == kSoRcvbuf) {
        x = std::min<uint64_t>(static_cast<uint32_t>(v), sys.rmem_max.load());
      } else {
        if (!Capable(c, kCapNetAdmin)) return kEPERM;
        x = std::max(v, 0);
      }
      x = std::min<int64_t>(x, INT32_MAX / 2);
      st.userlocks |= kSockRcvbufLock;
      rcvbuf_ = std::max<int64_t>(x * 2, kSockMinRcvbuf);
      return OkResult();
    }
    case kSoKeepalive:
      st.keepalive = b;
      return OkResult();
    case kSoOobinline:
      st.oobinline = b;
      return OkResult();
    case kSoNoCheck:
      st.no_check = b;
      return OkResult();
    case kSoLinger: {
      struct linger lg;
      if (val.size() < sizeof(lg)) return kEINVAL;
      memcpy(&lg, val.data(), sizeof(lg));
      if (lg.l_onoff == 0) {
        st.linger = false;
      } else {
        // t_sec is unsigned long: a negative l_linger is "forever".
        uint64_t t = static_cast<uint64_t>(static_cast<int64_t>(lg.l_linger));
        st.lingertime = t >= static_cast<uint64_t>(kMaxScheduleTimeout / kHz)
                            ? kMaxScheduleTimeout
                            : static_cast<int64_t>(t) * kHz;
        st.linger = true;
      }
      return OkResult();
    }
    case kSoBsdcompat:
      return OkResult();
    case kSoPasscred:
      if (!MayScmRecv(family_)) return kEOPNOTSUPP;
      passcred_ = b;
      return OkResult();
    case kSoPasssec:
      if (!MayScmRecv(family_)) return kEOPNOTSUPP;
      st.passsec = b;
      return OkResult();
    case kSoPasspidfd:
      if (family_ != AF_UNIX) return kEOPNOTSUPP;
      st.passpidfd = b;
      return OkResult();
    case kSoPassrights:
      if (family_ != AF_UNIX) return kEOPNOTSUPP;
      st.passrights = b;
      return OkResult();
    case kSoTimestampOld:
    case kSoTimestampNew:
    case kSoTimestampnsOld:
    case kSoTimestampnsNew:  // __sock_set_timestamps
      st.tstamp_new = name == kSoTimestampNew || name == kSoTimestampnsNew;
      if (b) {
        st.rcvtstampns = name == kSoTimestampnsOld || name == kSoTimestampnsNew;
        st.rcvtstamp = true;
      } else {
        st.rcvtstamp = st.rcvtstampns = false;
      }
      return OkResult();
    case kSoTimestampingOld:
    case kSoTimestampingNew: {
      uint32_t flags = static_cast<uint32_t>(v);
      if (flags & ~kSofTimestampingMask) return kEINVAL;
      st.tsflags = flags;
      st.tstamp_new = name == kSoTimestampingNew;
      return OkResult();
    }
    case kSoRcvlowat:
      st.rcvlowat = v < 0 ? INT32_MAX : (v == 0 ? 1 : v);
      return OkResult();
    case kSoRcvtimeoOld:
    case kSoRcvtimeoNew: {
      TRY(int64_t j, TimeoutFromUser(val));
      rcvtimeo_ = j;
      return OkResult();
    }
    case kSoSndtimeoOld:
    case kSoSndtimeoNew: {
      TRY(int64_t j, TimeoutFromUser(val));
      sndtimeo_ = j;
      return OkResult();
    }
    case kSoDetachFilter:
      return kENOENT;  // no filter attached
    case kSoLockFilter:
      if (st.lock_filter && !b) return kEPERM;
      st.lock_filter = b;
      return OkResult();
    case kSoMark:
      if (!Capable(c, kCapNetRaw) && !Capable(c, kCapNetAdmin)) return kEPERM;
      st.mark = static_cast<uint32_t>(v);
      return OkResult();
    case kSoRcvmark:
      st.rcvmark = b;
      return OkResult();
    case kSoRcvpriority:
      st.rcvpriority = b;
      return OkResult();
    case kSoRxqOvfl:
      st.rxq_ovfl = b;
      return OkResult();
    case kSoWifiStatus:
      st.wifi_status = b;
      return OkResult();
    case kSoNofcs:
      st.nofcs = b;
      return OkResult();
    case kSoSelectErrQueue:
      st.select_err_queue = b;
      return OkResult();
    case kSoIncomingCpu:
      st.incoming_cpu = v;
      return OkResult();
    case kSoCnxAdvice:
      return OkResult();
    case kSoZerocopy:
      return kEOPNOTSUPP;  // Internet and RDS sockets only
    case kSoBindtoifindex:
      if (st.bound_dev_if != 0 && !Capable(c, kCapNetRaw)) return kEPERM;
      if (v < 0) return kEINVAL;
      st.bound_dev_if = v;
      return OkResult();
    case kSoBufLock:
      if (v & ~kSockBufLockMask) return kEINVAL;
      st.userlocks = v | (st.userlocks & ~kSockBufLockMask);
      return OkResult();
    case kSoReserveMem:
      if (v < 0) return kEINVAL;
      return kEOPNOTSUPP;  // no memory accounting (sk_has_account)
    default:
      return kENOPROTOOPT;
  }
}

// sk_getsockopt: `out` is the guest's buffer (len bytes, len >= 0 checked
// by the caller); returns the new optlen.
KResult<size_t> Socket::GetSolSocket(Caller& c, int name,
                                     absl::Span<uint8_t> out) {
  if (name == kSoPeername) {
    KResult<SockAddr> a = GetPeerName(c);
    if (!a.ok()) return kENOTCONN;
    if (a.value().len < out.size()) return kEINVAL;
    return PutOpt(out, a.value().bytes, out.size());
  }
  if (name == kSoError) {
    int e = TakeSoError();
    return PutInt(out, e);
  }
  if (name == kSoBindtodevice) {  // sock_getbindtodevice
    int index;
    {
      absl::MutexLock l(&opt_mu_);
      index = stored_->bound_dev_if;
    }
    if (index == 0) return size_t{0};
    if (out.size() < kIfNamSiz) return kEINVAL;
    // The table is looked at without opt_mu_ held.
    const std::string dev = IfNameByIndex(c, index);
    if (dev.empty()) return kENODEV;
    return PutOpt(out, dev.c_str(), dev.size() + 1);
  }
  absl::MutexLock l(&opt_mu_);
  const Stored& st = *stored_;
  switch (name) {
    case kSoDebug:
      return PutInt(out, st.debug);
    case kSoDontroute:
      return PutInt(out, st.dontroute);
    case kSoBroadcast:
      return PutInt(out, st.broadcast);
    case kSoSndbuf:
      return PutInt(out, static_cast<int>(sndbuf_));
    case kSoRcvbuf:
      return PutInt(out, static_cast<int>(rcvbuf_));
    case kSoReuseaddr:
      return PutInt(out, st.reuseaddr);
    case kSoReuseport:
      return PutInt(out, st.reuseport);
    case kSoKeepalive:
      return PutInt(out, st.keepalive);
    case kSoType:
      return PutInt(out, type_);
    case kSoProtocol:
      return PutInt(out, protocol_);
    case kSoDomain:
      return PutInt(out, family_);
    case kSoOobinline:
      return PutInt(out, st.oobinline);
    case kSoNoCheck:
      return PutInt(out, st.no_check);
    case kSoPriority:
      return PutInt(out, st.priority);
    case kSoLinger: {
      struct linger lg = {};
      lg.l_onoff = st.linger;
      lg.l_linger = static_cast<int>(st.lingertime / kHz);
      return PutOpt(out, &lg, sizeof(lg));
    }
    case kSoBsdcompat:
      return PutInt(out, 0);
    case kSoTimestampOld:
      return PutInt(out, st.rcvtstamp && !st.tstamp_new && !st.rcvtstampns);
    case kSoTimestampnsOld:
      return PutInt(out, st.rcvtstampns && !st.tstamp_new);
    case kSoTimestampNew:
      return PutInt(out, st.rcvtstamp && st.tstamp_new);
    case kSoTimestampnsNew:
      return PutInt(out, st.rcvtstampns && st.tstamp_new);
    case kSoTimestampingOld:
    case kSoTimestampingNew: {
      struct {
        int flags, bind_phc;
      } ts = {0, 0};
      if (name == kSoTimestampingOld || st.tstamp_new) {
        ts.flags = static_cast<int>(st.tsflags);
      }
      return PutOpt(out, &ts, sizeof(ts));
    }
    case kSoRcvtimeoOld:
    case kSoRcvtimeoNew:
      return TimeoutToUser(rcvtimeo_, out);
    case kSoSndtimeoOld:
    case kSoSndtimeoNew:
      return TimeoutToUser(sndtimeo_, out);
    case kSoRcvlowat:
      return PutInt(out, st.rcvlowat);
    case kSoSndlowat:
      return PutInt(out, 1);
    case kSoPasscred:
      if (!MayScmRecv(family_)) return kEOPNOTSUPP;
      return PutInt(out, passcred_);
    case kSoPasssec:
      if (!MayScmRecv(family_)) return kEOPNOTSUPP;
      return PutInt(out, st.passsec);
    case kSoPasspidfd:
      if (family_ != AF_UNIX) return kEOPNOTSUPP;
      return PutInt(out, st.passpidfd);
    case kSoPassrights:
      if (family_ != AF_UNIX) return kEOPNOTSUPP;
      return PutInt(out, st.passrights);
    case kSoPeercred: {
      Ucred none{0, kOverflowId, kOverflowId};
      return PutOpt(out, &none, sizeof(none));
    }
    case kSoPeergroups:
      return size_t{0};  // no peer credentials: no groups
    case kSoAcceptconn:
      return PutInt(out, listening_);
    case kSoMark:
      return PutInt(out, static_cast<int>(st.mark));
    case kSoRcvmark:
      return PutInt(out, st.rcvmark);
    case kSoRcvpriority:
      return PutInt(out, st.rcvpriority);
    case kSoRxqOvfl:
      return PutInt(out, st.rxq_ovfl);
    case kSoWifiStatus:
      return PutInt(out, st.wifi_status);
    case kSoPeekOff:
      return kEOPNOTSUPP;
    case kSoNofcs:
      return PutInt(out, st.nofcs);
    case kSoGetFilter:
      return size_t{0};  // no filter attached
    case kSoLockFilter:
      return PutInt(out, st.lock_filter);
    case kSoBpfExtensions:
      return PutInt(out, 0);
    case kSoSelectErrQueue:
      return PutInt(out, st.select_err_queue);
    case kSoBusyPoll:
      return PutInt(out, st.busy_poll);
    case kSoPreferBusyPoll:
      return PutInt(out, st.prefer_busy_poll);
    case kSoMaxPacingRate:
      if (out.size() >= sizeof(uint64_t)) {
        return PutOpt(out, &st.max_pacing_rate, sizeof(uint64_t));
      }
      return PutInt(out, static_cast<int>(std::min<uint64_t>(st.max_pacing_rate,
                                                             UINT32_MAX)));
    case kSoIncomingCpu:
      return PutInt(out, st.incoming_cpu);
    case kSoCookie: {
      if (out.size() < sizeof(uint64_t)) return kEINVAL;
      if (stored_->cookie == 0) stored_->cookie = next_cookie.fetch_add(1);
      return PutOpt(out, &stored_->cookie, sizeof(uint64_t));
    }
    case kSoZerocopy:
      return PutInt(out, 0);
    case kSoTxtime: {
      uint64_t zero = 0;  // struct sock_txtime {clockid, flags}
      return PutOpt(out, &zero, sizeof(zero));
    }
    case kSoBindtoifindex:
      return PutInt(out, st.bound_dev_if);
    case kSoNetnsCookie: {
      if (out.size() != sizeof(uint64_t)) return kEINVAL;
      uint64_t cookie = 1;  // the one network namespace
      return PutOpt(out, &cookie, sizeof(cookie));
    }
    case kSoBufLock:
      return PutInt(out, st.userlocks & kSockBufLockMask);
    case kSoReserveMem:
      return PutInt(out, 0);
    case kSoTxrehash:
      return kEOPNOTSUPP;
    default:
      // SO_SNDLOWAT and the like are not settable (1003.1g 7); unknown
      // names, SO_PEERSEC without an LSM.
      return kENOPROTOOPT;
  }
}

KResult<uint64_t> Socket::SocketIoctl(Caller&, uint32_t, uint64_t) {
  return kENOTTY;
}

KResult<size_t> Socket::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) {
  Caller c = CurrentCaller(ctx);
  SpanIo io(dst);
  RecvRequest req;
  KResult<size_t> r = RecvMsg(c, io, req);
  if (!r.ok() && r.error() == kERestartSys) return IntrErrno(false);
  return r;
}

KResult<size_t> Socket::Write(vfs::IoContext& ctx,
                              absl::Span<const uint8_t> src) {
  Caller c = CurrentCaller(ctx);
  SpanIo io(src);
  SendRequest req;
  KResult<size_t> r = SendMsg(c, io, req);
  if (!r.ok() && r.error() == kERestartSys) return IntrErrno(true);
  return r;
}

KResult<abi::Stat> Socket::Stat() { return location_.dentry->inode().Stat(); }

KResult<uint64_t> Socket::Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                                uint64_t arg) {
  Caller c = CurrentCaller(ctx);
  // sock_do_ioctl -> dev_ioctl: the interface ioctls of every socket.
  if (stack::IsInterfaceIoctl(cmd)) {
    constexpr int kCapNetAdmin = 12;
    bool admin = ctx.creds == nullptr || ctx.creds->HasCapability(kCapNetAdmin);
    return stack::InterfaceIoctl(c.netns->Get<stack::Interfaces>(), ctx.user,
                                 admin, cmd, arg);
  }
  return SocketIoctl(c, cmd, arg);
}

int64_t Socket::sndbuf() const {
  absl::MutexLock l(&opt_mu_);
  return sndbuf_;
}
int64_t Socket::rcvbuf() const {
  absl::MutexLock l(&opt_mu_);
  return rcvbuf_;
}
bool Socket::passcred() const {
  absl::MutexLock l(&opt_mu_);
  return passcred_;
}

int64_t Socket::RecvDeadline() const {
  absl::MutexLock l(&opt_mu_);
  return DeadlineOf(rcvtimeo_);
}
int64_t Socket::SendDeadline() const {
  absl::MutexLock l(&opt_mu_);
  return DeadlineOf(sndtimeo_);
}

Errno Socket::IntrErrno(bool send) const {
  absl::MutexLock l(&opt_mu_);
  return (send ? sndtimeo_ : rcvtimeo_) == kMaxScheduleTimeout ? kERestartSys
                                                               : kEINTR;
}

Socket::SolFlags Socket::sol_flags() const {
  absl::MutexLock l(&opt_mu_);
  const Stored& st = *stored_;
  SolFlags f;
  f.reuseaddr = st.reuseaddr;
  f.reuseport = st.reuseport;
  f.keepalive = st.keepalive;
  f.oobinline = st.oobinline;
  f.broadcast = st.broadcast;
  f.linger = st.linger;
  f.lingertime = st.lingertime;
  f.rcvlowat = st.rcvlowat;
  f.rcvtstamp = st.rcvtstamp;
  f.rcvtstampns = st.rcvtstampns;
  f.bound_dev_if = st.bound_dev_if;
  f.priority = st.priority;
  return f;
}

void Socket::SetSoError(int err) {
  absl::MutexLock l(&opt_mu_);
  so_error_ = err;
}
int Socket::TakeSoError() {
  absl::MutexLock l(&opt_mu_);
  int e = so_error_;
  so_error_ = 0;
  return e;
}

void Socket::set_listening(bool v) {
  absl::MutexLock l(&opt_mu_);
  listening_ = v;
}

void Socket::SetBufferDefaults(int64_t sndbuf, int64_t rcvbuf) {
  absl::MutexLock l(&opt_mu_);
  sndbuf_ = sndbuf;
  rcvbuf_ = rcvbuf;
}

Socket* AsSocket(vfs::FileDescription& f) { return dynamic_cast<Socket*>(&f); }

}  // namespace sandbox::net
