#include "sentry/fs/proc/net.h"

#include <limits.h>
#include <stdlib.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sentry/kernel/log.h"
#include "sentry/net/namespace.h"
#include "sentry/net/proc_net.h"

namespace sandbox::fs::proc {
namespace {

// SOCK_MIN_RCVBUF / SOCK_MIN_SNDBUF (2048 + the aligned struct sk_buff;
// twice that for send buffers): the least rmem_* / wmem_* take.
constexpr int64_t kMinRcvbuf = 2304;
constexpr int64_t kMinSndbuf = 4608;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n'; }

std::shared_ptr<vfs::Inode> Sysctl(kernfs::Filesystem& fs,
                                   std::atomic<int64_t> net::NetSysctls::*v,
                                   int64_t min, int64_t max) {
  auto f = std::make_shared<kernfs::GeneratedFile>(
      fs, 0644, [v]() -> KResult<std::string> {
        return absl::StrCat((net::NetNamespace::Root().sysctl().*v).load(),
                            "\n");
      });
  f->SetWriter([v, min, max](std::string_view data) -> KResult<size_t> {
    size_t consumed = 0;
    TRY(std::optional<int64_t> val, ParseSysctlInt(data, min, max, &consumed));
    if (val) (net::NetNamespace::Root().sysctl().*v).store(*val);
    return consumed;
  });
  return f;
}

// jiffies (HZ 250) in an int: proc_dointvec_jiffies's limit on seconds.
constexpr int64_t kJiffiesMaxSec = INT_MAX / 250;

using S = net::NetSysctls;
using Field = std::atomic<int64_t> S::*;

// A sysctl of several ints (proc_dointvec_minmax over a vector): read as
// the values joined by tabs; a write parses up to that many values (the
// rest keep theirs), then `commit` checks and stores them.
std::shared_ptr<vfs::Inode> SysctlVec(
    kernfs::Filesystem& fs, std::vector<Field> fields,
    std::function<KResult<size_t>(S&, std::string_view)> write) {
  auto f = std::make_shared<kernfs::GeneratedFile>(
      fs, 0644, [fields]() -> KResult<std::string> {
        S& sys = net::NetNamespace::Root().sysctl();
        std::vector<int64_t> v;
        for (Field fl : fields) v.push_back((sys.*fl).load());
        return absl::StrCat(absl::StrJoin(v, "\t"), "\n");
      });
  f->SetWriter([write](std::string_view data) -> KResult<size_t> {
    return write(net::NetNamespace::Root().sysctl(), data);
  });
  return f;
}

std::shared_ptr<vfs::Inode> ReadOnly(kernfs::Filesystem& fs,
                                     std::string content) {
  return std::make_shared<kernfs::GeneratedFile>(fs, 0444, std::move(content));
}

}  // namespace

KResult<std::vector<int64_t>> ParseSysctlInts(std::string_view data,
                                              std::vector<int64_t> current,
                                              int64_t min, int64_t max,
                                              size_t* consumed) {
  size_t at = 0;
  bool any = false;
  for (size_t i = 0; i < current.size() && at < data.size(); i++) {
    size_t used = 0;
    TRY(std::optional<int64_t> v,
        ParseSysctlInt(data.substr(at), min, max, &used));
    at += used;
    if (!v.has_value()) break;
    current[i] = *v;
    any = true;
  }
  // __do_proc_dointvec: a write with no number at all is EINVAL.
  if (!any) return kEINVAL;
  *consumed = at;
  return current;
}

// ipv4_local_port_range: each end in [1, 65535], low <= high, and low not
// below net.ipv4.ip_unprivileged_port_start.
KResult<size_t> WriteLocalPortRange(net::NetSysctls& sys,
                                    std::string_view data) {
  size_t consumed = 0;
  TRY(std::vector<int64_t> r,
      ParseSysctlInts(
          data, {sys.ip_local_port_lo.load(), sys.ip_local_port_hi.load()}, 1,
          65535, &consumed));
  if (r[1] < r[0] || r[0] < sys.ip_unprivileged_port_start.load()) {
    return kEINVAL;
  }
  sys.ip_local_port_lo.store(r[0]);
  sys.ip_local_port_hi.store(r[1]);
  return consumed;
}

// ipv4_ping_group_range: gids in [0, GID_T_MAX]; high < low disables ping
// sockets ("1 0"), not an error.
KResult<size_t> WritePingGroupRange(net::NetSysctls& sys,
                                    std::string_view data) {
  size_t consumed = 0;
  TRY(std::vector<int64_t> r,
      ParseSysctlInts(data,
                      {sys.ping_group_lo.load(), sys.ping_group_hi.load()}, 0,
                      INT_MAX, &consumed));
  if (r[1] < r[0]) r = {1, 0};
  sys.ping_group_lo.store(r[0]);
  sys.ping_group_hi.store(r[1]);
  return consumed;
}

// ipv4_privileged_ports: [0, 65535], not above the local port range's low
// end.
KResult<size_t> WriteUnprivilegedPortStart(net::NetSysctls& sys,
                                           std::string_view data) {
  size_t consumed = 0;
  TRY(std::optional<int64_t> v, ParseSysctlInt(data, 0, 65535, &consumed));
  if (!v.has_value()) return consumed;
  if (sys.ip_local_port_lo.load() < *v) return kEINVAL;
  sys.ip_unprivileged_port_start.store(*v);
  return consumed;
}

// tcp_rmem / tcp_wmem: three ints, each at least 1.
static KResult<size_t> WriteTcpMem(std::atomic<int64_t>* v[3],
                                   std::string_view data) {
  size_t consumed = 0;
  TRY(std::vector<int64_t> r,
      ParseSysctlInts(data, {v[0]->load(), v[1]->load(), v[2]->load()}, 1,
                      INT_MAX, &consumed));
  for (int i = 0; i < 3; i++) v[i]->store(r[i]);
  return consumed;
}

KResult<std::optional<int64_t>> ParseSysctlInt(std::string_view data,
                                               int64_t min, int64_t max,
                                               size_t* consumed) {
  size_t i = 0;
  while (i < data.size() && IsSpace(data[i])) ++i;
  if (i == data.size()) {
    *consumed = data.size();
    return std::optional<int64_t>();
  }
  // proc_get_long: the number is copied to a 22-byte buffer first.
  constexpr size_t kTmpBufLen = 22;
  std::string tmp(data.substr(i, kTmpBufLen - 1));
  bool neg = false;
  size_t j = 0;
  if (!tmp.empty() && tmp[0] == '-') {
    neg = true;
    j = 1;
  }
  if (j >= tmp.size() || !isdigit(static_cast<unsigned char>(tmp[j]))) {
    return kEINVAL;
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long u = strtoull(tmp.c_str() + j, &end, 0);
  if (errno == ERANGE) return kEINVAL;
  size_t len = static_cast<size_t>(end - tmp.c_str());
  // A number filling the buffer may have been cut: too long.
  if (len > kTmpBufLen - 2) return kEINVAL;
  size_t after = i + len;
  if (after < data.size() && !IsSpace(data[after])) return kEINVAL;
  int64_t v;
  if (neg) {
    if (u > static_cast<unsigned long long>(INT_MAX) + 1) return kEINVAL;
    v = -static_cast<int64_t>(u);
  } else {
    if (u > static_cast<unsigned long long>(INT_MAX)) return kEINVAL;
    v = static_cast<int64_t>(u);
  }
  if (v < min || v > max) return kEINVAL;
  while (after < data.size() && IsSpace(data[after])) ++after;
  *consumed = after;
  return std::optional<int64_t>(v);
}

std::shared_ptr<kernfs::Dir> NewNetDir(kernfs::Filesystem& fs) {
  auto dir = std::make_shared<kernfs::Dir>(fs, 0555);
  for (const std::string& name : net::ProcNetFileNames()) {
    dir->Add(name, std::make_shared<kernfs::GeneratedFile>(
                       fs, 0444, [name]() -> KResult<std::string> {
                         std::optional<std::string> s =
                             net::GenerateProcNetFile(
                                 name, net::NetNamespace::Root());
                         if (!s) return kENOENT;
                         return *s;
                       }));
  }
  return dir;
}

// /proc/sys/net/ipv4: the handlers of net/ipv4/sysctl_net_ipv4.c.
std::shared_ptr<kernfs::Dir> NewSysNetIpv4Dir(kernfs::Filesystem& fs) {
  auto d = std::make_shared<kernfs::Dir>(fs, 0555);
  d->Add("ip_local_port_range",
         SysctlVec(fs, {&S::ip_local_port_lo, &S::ip_local_port_hi},
                   &WriteLocalPortRange));
  d->Add("ping_group_range",
         SysctlVec(fs, {&S::ping_group_lo, &S::ping_group_hi},
                   &WritePingGroupRange));
  d->Add("ip_unprivileged_port_start",
         SysctlVec(fs, {&S::ip_unprivileged_port_start},
                   &WriteUnprivilegedPortStart));
  // proc_dou8vec_minmax with [0, 1] / [1, 255].
  d->Add("ip_nonlocal_bind", Sysctl(fs, &S::ip_nonlocal_bind, 0, 1));
  d->Add("ip_default_ttl", Sysctl(fs, &S::ip_default_ttl, 1, 255));
  d->Add("tcp_rmem",
         SysctlVec(
             fs, {&S::tcp_rmem_min, &S::tcp_rmem_default, &S::tcp_rmem_max},
             [](S& sys, std::string_view data) {
               std::atomic<int64_t>* v[3] = {
                   &sys.tcp_rmem_min, &sys.tcp_rmem_default, &sys.tcp_rmem_max};
               return WriteTcpMem(v, data);
             }));
  d->Add("tcp_wmem",
         SysctlVec(
             fs, {&S::tcp_wmem_min, &S::tcp_wmem_default, &S::tcp_wmem_max},
             [](S& sys, std::string_view data) {
               std::atomic<int64_t>* v[3] = {
                   &sys.tcp_wmem_min, &sys.tcp_wmem_default, &sys.tcp_wmem_max};
               return WriteTcpMem(v, data);
             }));
  // proc_dointvec_jiffies (seconds).
  d->Add("tcp_fin_timeout",
         Sysctl(fs, &S::tcp_fin_timeout, -kJiffiesMaxSec, kJiffiesMaxSec));
  d->Add("tcp_keepalive_time",
         Sysctl(fs, &S::tcp_keepalive_time, -kJiffiesMaxSec, kJiffiesMaxSec));
  d->Add("tcp_keepalive_intvl",
         Sysctl(fs, &S::tcp_keepalive_intvl, -kJiffiesMaxSec, kJiffiesMaxSec));
  d->Add("tcp_keepalive_probes", Sysctl(fs, &S::tcp_keepalive_probes, 0, 255));
  // [1, MAX_TCP_SYNCNT].
  d->Add("tcp_syn_retries", Sysctl(fs, &S::tcp_syn_retries, 1, 127));
  d->Add("tcp_max_syn_backlog",
         Sysctl(fs, &S::tcp_max_syn_backlog, INT_MIN, INT_MAX));
  // The congestion controls: cubic (the default) and reno, built in.
  auto cc = std::make_shared<kernfs::GeneratedFile>(
      fs, 0644, []() -> KResult<std::string> {
        return net::NetNamespace::Root().sysctl().tcp_congestion.load() == 0
                   ? std::string("reno\n")
                   : std::string("cubic\n");
      });
  cc->SetWriter([](std::string_view data) -> KResult<size_t> {
    // proc_tcp_congestion_control: a name of at most TCP_CA_NAME_MAX - 1
    // bytes (proc_dostring), then tcp_set_default_congestion_control.
    std::string_view name = data.substr(0, data.find('\n'));
    if (name == "reno") {
      net::NetNamespace::Root().sysctl().tcp_congestion.store(0);
    } else if (name == "cubic") {
      net::NetNamespace::Root().sysctl().tcp_congestion.store(1);
    } else {
      return kENOENT;
    }
    return data.size();
  });
  d->Add("tcp_congestion_control", cc);
  d->Add("tcp_available_congestion_control", ReadOnly(fs, "reno cubic\n"));
  d->Add("tcp_allowed_congestion_control", ReadOnly(fs, "reno cubic\n"));
  return d;
}

// /proc/sys/net/ipv6: bindv6only (proc_dou8vec_minmax) and
// conf/all/disable_ipv6 (0: IPv6 stays on; other values are stored but do
// nothing).
std::shared_ptr<kernfs::Dir> NewSysNetIpv6Dir(kernfs::Filesystem& fs) {
  auto d = std::make_shared<kernfs::Dir>(fs, 0555);
  d->Add("bindv6only", Sysctl(fs, &S::ip6_bindv6only, 0, 255));
  auto conf = std::make_shared<kernfs::Dir>(fs, 0555);
  auto all = std::make_shared<kernfs::Dir>(fs, 0555);
  auto disable = std::make_shared<kernfs::GeneratedFile>(
      fs, 0644, []() -> KResult<std::string> {
        return absl::StrCat(
            net::NetNamespace::Root().sysctl().ip6_disable_ipv6.load(), "\n");
      });
  disable->SetWriter([](std::string_view data) -> KResult<size_t> {
    size_t consumed = 0;
    TRY(std::optional<int64_t> v,
        ParseSysctlInt(data, INT_MIN, INT_MAX, &consumed));
    if (v.has_value()) {
      if (*v != 0) {
        kernel::LogUnsupported(
            "net.ipv6.conf.all.disable_ipv6=%d is stored but IPv6 stays on",
            *v);
      }
      net::NetNamespace::Root().sysctl().ip6_disable_ipv6.store(*v);
    }
    return consumed;
  });
  all->Add("disable_ipv6", disable);
  conf->Add("all", all);
  d->Add("conf", conf);
  return d;
}

std::shared_ptr<kernfs::Dir> NewSysNetDir(kernfs::Filesystem& fs) {
  using S = net::NetSysctls;
  auto core = std::make_shared<kernfs::Dir>(fs, 0555);
  // net.core.somaxconn: proc_dointvec_minmax with extra1 = 0.
  core->Add("somaxconn", Sysctl(fs, &S::somaxconn, 0, INT_MAX));
  core->Add("rmem_max", Sysctl(fs, &S::rmem_max, kMinRcvbuf, INT_MAX));
  core->Add("wmem_max", Sysctl(fs, &S::wmem_max, kMinSndbuf, INT_MAX));
  core->Add("rmem_default", Sysctl(fs, &S::rmem_default, kMinRcvbuf, INT_MAX));
  core->Add("wmem_default", Sysctl(fs, &S::wmem_default, kMinSndbuf, INT_MAX));
  auto unix_dir = std::make_shared<kernfs::Dir>(fs, 0555);
  // net.unix.max_dgram_qlen: proc_dointvec (any int).
  unix_dir->Add("max_dgram_qlen",
                Sysctl(fs, &S::max_dgram_qlen, INT_MIN, INT_MAX));
  auto net_dir = std::make_shared<kernfs::Dir>(fs, 0555);
  net_dir->Add("core", core);
  net_dir->Add("unix", unix_dir);
  net_dir->Add("ipv4", NewSysNetIpv4Dir(fs));
  net_dir->Add("ipv6", NewSysNetIpv6Dir(fs));
  return net_dir;
}

}  // namespace sandbox::fs::proc
