// /proc/net (a link to self/net), /proc/PID/net and /proc/sys/net.
//
// net/: the files of sentry/net/proc_net.h's registry (dev, if_inet6,
// netlink, unix, and whatever families register), generated on each read
// for the sandbox's network namespace (one today: NetNamespace::Root();
// /proc/PID/net shows it for every PID).
//
// sys/net/: core/{somaxconn,rmem_max,wmem_max,rmem_default,wmem_default}
// and unix/max_dgram_qlen, backed by NetNamespace::sysctl() (the values
// the sockets read). Mode 0644, so root writes them as on Linux's initial
// namespace; a write is parsed as proc_dointvec_minmax parses it.
#ifndef SENTRY_FS_PROC_NET_H_
#define SENTRY_FS_PROC_NET_H_

#include <stdint.h>

#include <memory>
#include <string_view>

#include "sentry/base/result.h"
#include "sentry/fs/kernfs/kernfs.h"

namespace sandbox::fs::proc {

std::shared_ptr<kernfs::Dir> NewNetDir(kernfs::Filesystem& fs);
std::shared_ptr<kernfs::Dir> NewSysNetDir(kernfs::Filesystem& fs);

// One integer written to a sysctl file, parsed as __do_proc_dointvec does
// for a one-value table: leading white space skipped; an optional '-';
// digits in base 0 (0x.. hex, 0.. octal) within int range; then white
// space or the end. Returns the value (nullopt for white space only) and
// sets *consumed to the bytes the write consumed (the number and the white
// space after it). EINVAL for anything else, or outside [min, max].
KResult<std::optional<int64_t>> ParseSysctlInt(std::string_view data,
                                               int64_t min, int64_t max,
                                               size_t* consumed);

}  // namespace sandbox::fs::proc

#endif  // SENTRY_FS_PROC_NET_H_
