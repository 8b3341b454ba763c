// /proc/net (a link to self/net), /proc/PID/net and /proc/sys/net.
//
// net/: the files of sentry/net/proc_net.h's registry (dev, if_inet6,
// netlink, unix, and whatever families register), generated on each read
// for the sandbox's network namespace (one today: NetNamespace::Root();
// /proc/PID/net shows it for every PID).
//
// sys/net/: core/{somaxconn,rmem_max,wmem_max,rmem_default,wmem_default},
// unix/max_dgram_qlen, ipv4/{ip_local_port_range, ping_group_range,
// ip_unprivileged_port_start, ip_nonlocal_bind, ip_default_ttl, tcp_rmem,
// tcp_wmem, tcp_fin_timeout, tcp_keepalive_{time,intvl,probes},
// tcp_syn_retries, tcp_max_syn_backlog, tcp_congestion_control,
// tcp_{available,allowed}_congestion_control} and ipv6/{bindv6only,
// conf/all/disable_ipv6}, backed by NetNamespace::sysctl() (the values
// the sockets read); vectors read as tab-separated values. Mode 0644, so root
// writes them as on Linux's initial namespace; a write is parsed as
// proc_dointvec_minmax parses it.
#ifndef SENTRY_FS_PROC_NET_H_
#define SENTRY_FS_PROC_NET_H_

#include <stdint.h>

#include <memory>
#include <string_view>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/fs/kernfs/kernfs.h"
#include "sentry/net/namespace.h"

namespace sandbox::fs::proc {

std::shared_ptr<kernfs::Dir> NewNetDir(kernfs::Filesystem& fs);
std::shared_ptr<kernfs::Dir> NewSysNetDir(kernfs::Filesystem& fs);
std::shared_ptr<kernfs::Dir> NewSysNetIpv4Dir(kernfs::Filesystem& fs);
std::shared_ptr<kernfs::Dir> NewSysNetIpv6Dir(kernfs::Filesystem& fs);

// One integer written to a sysctl file, parsed as __do_proc_dointvec does
// for a one-value table: leading white space skipped; an optional '-';
// digits in base 0 (0x.. hex, 0.. octal) within int range; then white
// space or the end. Returns the value (nullopt for white space only) and
// sets *consumed to the bytes the write consumed (the number and the white
// space after it). EINVAL for anything else, or outside [min, max].
KResult<std::optional<int64_t>> ParseSysctlInt(std::string_view data,
                                               int64_t min, int64_t max,
                                               size_t* consumed);

// Several integers (a vector sysctl): up to current.size() values, each
// parsed as ParseSysctlInt; the values not written keep `current`'s.
// EINVAL when no value is given or one is bad.
KResult<std::vector<int64_t>> ParseSysctlInts(std::string_view data,
                                              std::vector<int64_t> current,
                                              int64_t min, int64_t max,
                                              size_t* consumed);

// The writes of the sysctls with checks across values (exposed for tests).
KResult<size_t> WriteLocalPortRange(net::NetSysctls& sys,
                                    std::string_view data);
KResult<size_t> WritePingGroupRange(net::NetSysctls& sys,
                                    std::string_view data);
KResult<size_t> WriteUnprivilegedPortStart(net::NetSysctls& sys,
                                           std::string_view data);

}  // namespace sandbox::fs::proc

#endif  // SENTRY_FS_PROC_NET_H_
