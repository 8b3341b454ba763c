// The SOL_TCP options (do_tcp_setsockopt / do_tcp_getsockopt, with their
// ranges and errnos), TCP_INFO (tcp_get_info), the SOL_SOCKET options TCP
// acts on (SO_RCVBUF/SO_SNDBUF set the window, SO_ERROR reads sk_err), and
// the /proc/net/tcp row.
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "sentry/net/namespace.h"
#include "sentry/net/tcp/tcp_socket.h"

namespace sandbox::net::tcp {
namespace {

// Option numbers (linux/tcp.h; not all in glibc's netinet/tcp.h).
constexpr int kTcpNodelay = 1, kTcpMaxseg = 2, kTcpCork = 3, kTcpKeepidle = 4,
              kTcpKeepintvl = 5, kTcpKeepcnt = 6, kTcpSyncnt = 7,
              kTcpLinger2 = 8, kTcpDeferAccept = 9, kTcpWindowClamp = 10,
              kTcpInfo = 11, kTcpQuickack = 12, kTcpCongestion = 13,
              kTcpThinLinear = 16, kTcpThinDupack = 17, kTcpUserTimeout = 18,
              kTcpFastopen = 23, kTcpNotsentLowat = 25,
              kTcpFastopenConnect = 30, kTcpFastopenNoCookie = 34, kTcpInq = 36,
              kTcpTxDelay = 37;
constexpr int kTcpCaNameMax = 16;
constexpr int kMaxKeepidle = 32767, kMaxKeepintvl = 32767, kMaxKeepcnt = 127,
              kMaxSyncnt = 127;
constexpr int kTcpMinMss = 88, kMaxTcpWindow = 65535;
constexpr int kFinTimeoutMax = 120;   // TCP_FIN_TIMEOUT_MAX / HZ
constexpr int kMinRcvbufHalf = 2304;  // SOCK_MIN_RCVBUF / 2
constexpr uint32_t kTcpMssDefault = 536;
constexpr uint32_t kLoopbackMtu = 65536;

// struct tcp_info of Linux 6.7+ (through tcpi_total_rto_time).
struct TcpInfo {
  uint8_t tcpi_state;
  uint8_t tcpi_ca_state;
  uint8_t tcpi_retransmits;
  uint8_t tcpi_probes;
  uint8_t tcpi_backoff;
  uint8_t tcpi_options;
  uint8_t tcpi_wscale;  // snd_wscale : 4, rcv_wscale : 4
  uint8_t tcpi_flags;   // delivery_rate_app_limited:1, fastopen_client_fail:2
  uint32_t tcpi_rto;
  uint32_t tcpi_ato;
  uint32_t tcpi_snd_mss;
  uint32_t tcpi_rcv_mss;
  uint32_t tcpi_unacked;
  uint32_t tcpi_sacked;
  uint32_t tcpi_lost;
  uint32_t tcpi_retrans;
  uint32_t tcpi_fackets;
  uint32_t tcpi_last_data_sent;
  uint32_t tcpi_last_ack_sent;
  uint32_t tcpi_last_data_recv;
  uint32_t tcpi_last_ack_recv;
  uint32_t tcpi_pmtu;
  uint32_t tcpi_rcv_ssthresh;
  uint32_t tcpi_rtt;
  uint32_t tcpi_rttvar;
  uint32_t tcpi_snd_ssthresh;
  uint32_t tcpi_snd_cwnd;
  uint32_t tcpi_advmss;
  uint32_t tcpi_reordering;
  uint32_t tcpi_rcv_rtt;
  uint32_t tcpi_rcv_space;
  uint32_t tcpi_total_retrans;
  uint64_t tcpi_pacing_rate;
  uint64_t tcpi_max_pacing_rate;
  uint64_t tcpi_bytes_acked;
  uint64_t tcpi_bytes_received;
  uint32_t tcpi_segs_out;
  uint32_t tcpi_segs_in;
  uint32_t tcpi_notsent_bytes;
  uint32_t tcpi_min_rtt;
  uint32_t tcpi_data_segs_in;
  uint32_t tcpi_data_segs_out;
  uint64_t tcpi_delivery_rate;
  uint64_t tcpi_busy_time;
  uint64_t tcpi_rwnd_limited;
  uint64_t tcpi_sndbuf_limited;
  uint32_t tcpi_delivered;
  uint32_t tcpi_delivered_ce;
  uint64_t tcpi_bytes_sent;
  uint64_t tcpi_bytes_retrans;
  uint32_t tcpi_dsack_dups;
  uint32_t tcpi_reord_seen;
  uint32_t tcpi_rcv_ooopack;
  uint32_t tcpi_snd_wnd;
  uint32_t tcpi_rcv_wnd;
  uint32_t tcpi_rehash;
  uint16_t tcpi_total_rto;
  uint16_t tcpi_total_rto_recoveries;
  uint32_t tcpi_total_rto_time;
};
static_assert(offsetof(TcpInfo, tcpi_rto) == 8);
static_assert(offsetof(TcpInfo, tcpi_pacing_rate) == 104);
static_assert(offsetof(TcpInfo, tcpi_snd_wnd) == 228);
static_assert(sizeof(TcpInfo) == 248);

size_t PutBytes(absl::Span<uint8_t> out, const void* v, size_t lv) {
  size_t n = std::min(out.size(), lv);
  memcpy(out.data(), v, n);
  return n;
}

size_t PutInt(absl::Span<uint8_t> out, int32_t v) {
  return PutBytes(out, &v, sizeof(v));
}

// secs_to_retrans / retrans_to_secs (TCP_DEFER_ACCEPT), timeout 1 s, max
// 120 s.
int SecsToRetrans(int seconds) {
  int res = 0;
  if (seconds > 0) {
    int timeout = 1, period = 1;
    res = 1;
    while (seconds > period && res < 255) {
      res++;
      timeout <<= 1;
      if (timeout > 120) timeout = 120;
      period += timeout;
    }
  }
  return res;
}

int RetransToSecs(int retrans) {
  int period = 0;
  if (retrans > 0) {
    int timeout = 1;
    period = 1;
    while (--retrans) {
      timeout <<= 1;
      if (timeout > 120) timeout = 120;
      period += timeout;
    }
  }
  return period;
}

}  // namespace

KResult<void> TcpSocket::SetSockOpt(Caller& c, int level, int name,
                                    absl::Span<const uint8_t> val) {
  if (hostinet::HostStream* h = host()) {
    // The host socket acts on SOL_TCP and the SOL_SOCKET ones it knows;
    // the Sentry keeps its copy too (getsockopt reads it).
    KResult<void> r = h->SetSockOpt(level, name, val);
    if (!r.ok() && r.error() != kENOPROTOOPT) return r;
  }
  if (level == IPPROTO_TCP) return SetTcp(c, name, val);
  TRY_VOID(InetSocket::SetSockOpt(c, level, name, val));
  if (level == SOL_SOCKET) {
    switch (name) {
      case SO_RCVBUF:
      case SO_RCVBUFFORCE:
        // SOCK_RCVBUF_LOCK: the program's size, no autotuning.
        ep_->rcv_limit_.store(rcvbuf());
        break;
      case SO_SNDBUF:
      case SO_SNDBUFFORCE:
        ep_->snd_limit_.store(sndbuf());
        break;
      default:
        break;
    }
  }
  return OkResult();
}

KResult<void> TcpSocket::SetTcp(Caller&, int name,
                                absl::Span<const uint8_t> val) {
  if (name == kTcpCongestion) {
    // tcp_set_congestion_control: the built-in reno and cubic (what
    // tcp_allowed_congestion_control lists); others are not loaded.
    if (val.size() < 1) return kEINVAL;
    size_t n = std::min<size_t>(val.size(), kTcpCaNameMax - 1);
    std::string s(reinterpret_cast<const char*>(val.data()), n);
    s = s.substr(0, s.find('\0'));
    if (s != "reno" && s != "cubic") return kENOENT;
    absl::MutexLock l(&ep_->mu_);
    ep_->opts_.congestion = s;
    return OkResult();
  }
  if (val.size() < sizeof(int32_t)) return kEINVAL;
  int32_t v;
  memcpy(&v, val.data(), sizeof(v));
  absl::MutexLock l(&ep_->mu_);
  TcpOptions& o = ep_->opts_;
  const TcpState state = ep_->state_;
  switch (name) {
    case kTcpNodelay:
      o.nodelay = v != 0;
      return OkResult();
    case kTcpCork:
      o.cork = v != 0;
      return OkResult();
    case kTcpQuickack:
      o.quickack = (v & 1) != 0;
      return OkResult();
    case kTcpMaxseg:
      if (v != 0 && (v < kTcpMinMss || v > kMaxTcpWindow)) return kEINVAL;
      o.maxseg = v;
      return OkResult();
    case kTcpKeepidle:
      if (v < 1 || v > kMaxKeepidle) return kEINVAL;
      o.keepidle = v;
      return OkResult();
    case kTcpKeepintvl:
      if (v < 1 || v > kMaxKeepintvl) return kEINVAL;
      o.keepintvl = v;
      return OkResult();
    case kTcpKeepcnt:
      if (v < 1 || v > kMaxKeepcnt) return kEINVAL;
      o.keepcnt = v;
      return OkResult();
    case kTcpSyncnt:
      if (v < 1 || v > kMaxSyncnt) return kEINVAL;
      o.syncnt = v;
      return OkResult();
    case kTcpLinger2:
      o.linger2 = v < 0 ? -1 : std::min(v, kFinTimeoutMax);
      return OkResult();
    case kTcpDeferAccept:
      o.defer_accept = SecsToRetrans(v);
      return OkResult();
    case kTcpWindowClamp:
      if (v == 0) {
        if (state != kClose) return kEINVAL;
        o.window_clamp = 0;
      } else {
        o.window_clamp = v < kMinRcvbufHalf ? kMinRcvbufHalf : v;
      }
      return OkResult();
    case kTcpUserTimeout:
      if (v < 0) return kEINVAL;
      o.user_timeout = v;
      return OkResult();
    case kTcpNotsentLowat:
      o.notsent_lowat = v;
      return OkResult();
    case kTcpFastopen:
      if (v >= 0 && (state == kClose || state == kListen)) {
        o.fastopen = v;
        return OkResult();
      }
      return kEINVAL;
    case kTcpFastopenConnect:
      if (v < 0 || v > 1) return kEINVAL;
      if (state != kClose) return kEINVAL;
      o.fastopen_connect = v != 0;
      return OkResult();
    case kTcpFastopenNoCookie:
      if (v < 0 || v > 1) return kEINVAL;
      return OkResult();
    case kTcpThinLinear:
      if (v < 0 || v > 1) return kEINVAL;
      o.thin_linear = v != 0;
      return OkResult();
    case kTcpThinDupack:
      if (v < 0 || v > 1) return kEINVAL;
      return OkResult();
    case kTcpInq:
      if (v < 0 || v > 1) return kEINVAL;
      return OkResult();
    case kTcpTxDelay:
      o.tx_delay = std::max(v, 0);
      return OkResult();
    default:
      return kENOPROTOOPT;
  }
}

KResult<size_t> TcpSocket::GetSockOpt(Caller& c, int level, int name,
                                      absl::Span<uint8_t> val) {
  if (hostinet::HostStream* h = host()) {
    if (level == SOL_SOCKET && name == SO_ERROR) {
      const int e = h->TakeSoError();
      int v = e;
      const size_t n = std::min(val.size(), sizeof(v));
      memcpy(val.data(), &v, n);
      return n;
    }
    if (level == IPPROTO_TCP && name == kTcpInfo) {
      return h->GetSockOpt(level, name, val);
    }
  }
  if (level == IPPROTO_TCP) return GetTcp(c, name, val);
  if (level == SOL_SOCKET && name == SO_ERROR) {
    int e;
    {
      absl::MutexLock l(&ep_->mu_);
      e = ep_->TakeErrLocked();
    }
    if (e != 0) return PutInt(val, e);
  }
  return InetSocket::GetSockOpt(c, level, name, val);
}

KResult<size_t> TcpSocket::GetTcp(Caller&, int name, absl::Span<uint8_t> val) {
  NetSysctls& sys = ep_->netns().sysctl();
  // A snapshot of what the options report, taken under the lock.
  Endpoint& ep = *ep_;
  TcpOptions o;
  TcpState state;
  bool remote_v4;
  uint64_t bytes_sent, bytes_received, segs_out, segs_in;
  uint8_t shutdown;
  {
    absl::MutexLock l(&ep.mu_);
    o = ep.opts_;
    state = ep.state_;
    remote_v4 = ep.remote_.ip.is_v4();
    bytes_sent = ep.bytes_sent_;
    bytes_received = ep.rx_.tail();
    segs_out = ep.segs_out_;
    segs_in = ep.segs_in_;
    shutdown = ep.shutdown_;
  }
  const bool connected =
      state != kClose && state != kListen && state != kSynSent;
  const uint32_t hdr = (v6() && !remote_v4) ? 60 : 40;
  // mss_cache: the route's MTU less the headers and the timestamp option
  // once connected; TCP_MSS_DEFAULT before.
  // (tcp_bound_to_half_wnd halves it while the largest window the peer
  // advertised is the initial 64 KiB, as after a loopback handshake.)
  uint32_t mss = connected ? (kLoopbackMtu - hdr - 12) / 2 : kTcpMssDefault;
  if (o.maxseg != 0 && connected) {
    mss = std::min<uint32_t>(mss, static_cast<uint32_t>(o.maxseg) - 12);
  }
  switch (name) {
    case kTcpNodelay:
      return PutInt(val, o.nodelay);
    case kTcpCork:
      return PutInt(val, o.cork);
    case kTcpQuickack:
      return PutInt(val, o.quickack);
    case kTcpMaxseg:
      if (o.maxseg != 0 && !connected) return PutInt(val, o.maxseg);
      return PutInt(val, static_cast<int32_t>(mss));
    case kTcpKeepidle:
      return PutInt(val, o.keepidle != 0 ? o.keepidle
                                         : static_cast<int32_t>(
                                               sys.tcp_keepalive_time.load()));
    case kTcpKeepintvl:
      return PutInt(val,
                    o.keepintvl != 0
                        ? o.keepintvl
                        : static_cast<int32_t>(sys.tcp_keepalive_intvl.load()));
    case kTcpKeepcnt:
      return PutInt(val, o.keepcnt != 0 ? o.keepcnt
                                        : static_cast<int32_t>(
                                              sys.tcp_keepalive_probes.load()));
    case kTcpSyncnt:
      return PutInt(val, o.syncnt != 0 ? o.syncnt
                                       : static_cast<int32_t>(
                                             sys.tcp_syn_retries.load()));
    case kTcpLinger2:
      if (o.linger2 < 0) return PutInt(val, -1);
      return PutInt(val, o.linger2 != 0 ? o.linger2
                                        : static_cast<int32_t>(
                                              sys.tcp_fin_timeout.load()));
    case kTcpDeferAccept:
      return PutInt(val, RetransToSecs(o.defer_accept));
    case kTcpWindowClamp:
      return PutInt(val, o.window_clamp);
    case kTcpUserTimeout:
      return PutInt(val, o.user_timeout);
    case kTcpNotsentLowat:
      return PutInt(val, o.notsent_lowat);
    case kTcpFastopen:
      return PutInt(val, o.fastopen);
    case kTcpFastopenConnect:
      return PutInt(val, o.fastopen_connect);
    case kTcpThinLinear:
      return PutInt(val, o.thin_linear);
    case kTcpInq:
    case kTcpThinDupack:
    case kTcpFastopenNoCookie:
      return PutInt(val, 0);
    case kTcpTxDelay:
      return PutInt(val, o.tx_delay);
    case kTcpCongestion: {
      char name_buf[kTcpCaNameMax] = {};
      memcpy(name_buf, o.congestion.data(),
             std::min<size_t>(o.congestion.size(), kTcpCaNameMax - 1));
      return PutBytes(val, name_buf, kTcpCaNameMax);
    }
    case kTcpInfo: {
      TcpInfo info = {};
      info.tcpi_state = state;
      if (state != kListen && state != kClose) {
        info.tcpi_options = 1 | 2 | 4;  // TIMESTAMPS | SACK | WSCALE
        info.tcpi_wscale = 7 | (7 << 4);
      }
      info.tcpi_rto = connected ? 201000 : 1000000;  // µs
      info.tcpi_ato = connected ? 40000 : 0;
      info.tcpi_snd_mss = mss;
      info.tcpi_rcv_mss = connected ? std::min<uint32_t>(mss, 65483) : 0;
      info.tcpi_pmtu = connected ? kLoopbackMtu : 0;
      info.tcpi_rcv_ssthresh = connected ? 65483 : 0;
      info.tcpi_rtt = connected ? 10 : 0;
      info.tcpi_rttvar = connected ? 5 : 250000;
      info.tcpi_snd_ssthresh = 0x7fffffff;  // TCP_INFINITE_SSTHRESH
      info.tcpi_snd_cwnd = 10;
      info.tcpi_advmss = connected ? mss : kTcpMssDefault;
      info.tcpi_reordering = 3;
      info.tcpi_rcv_space = connected ? 65483 : 0;
      info.tcpi_pacing_rate = ~uint64_t{0};
      info.tcpi_max_pacing_rate = ~uint64_t{0};
      // snd_una's advance: the SYN and the FIN count one each.
      info.tcpi_bytes_acked = bytes_sent + (connected ? 1 : 0) +
                              ((shutdown & kSendShutdown) ? 1 : 0);
      info.tcpi_bytes_sent = bytes_sent;
      info.tcpi_bytes_received = bytes_received;
      info.tcpi_segs_out = static_cast<uint32_t>(segs_out);
      info.tcpi_segs_in = static_cast<uint32_t>(segs_in);
      info.tcpi_min_rtt = connected ? 5 : ~uint32_t{0};
      info.tcpi_delivered = static_cast<uint32_t>(segs_out);
      info.tcpi_snd_wnd = connected ? 65536 : 0;
      info.tcpi_rcv_wnd = connected ? 65536 : 0;
      return PutBytes(val, &info, sizeof(info));
    }
    default:
      return kENOPROTOOPT;
  }
}

inet::ProcRow TcpSocket::proc_row() const {
  inet::ProcRow r;
  r.local = LocalAddr();
  r.uid = owner_ids().uid;
  r.inode = ino();
  absl::MutexLock l(&ep_->mu_);
  r.state = ep_->state_;
  if (ep_->state_ == kListen) {
    r.rx_queue = ep_->accept_q_.size();
    // get_tcp4_sock: tx_queue is write_seq - snd_una, 0 for a listener
    // (the backlog is inet_diag's idiag_wqueue, which ss shows, not
    // /proc/net/tcp's).
    r.tx_queue = 0;
  } else {
    if (ep_->state_ != kClose) r.remote = ep_->remote_;
    r.rx_queue = ep_->rx_.size();
  }
  return r;
}

}  // namespace sandbox::net::tcp
