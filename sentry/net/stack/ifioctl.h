// The interface ioctls every socket answers (Linux's sock_do_ioctl ->
// dev_ioctl / dev_ifconf, net/core/dev_ioctl.c): SIOCGIFNAME,
// SIOCGIFINDEX, SIOCGIFFLAGS, SIOCSIFFLAGS (CAP_NET_ADMIN), SIOCGIFMTU,
// SIOCGIFMETRIC, SIOCGIFMAP, SIOCGIFTXQLEN, SIOCGIFHWADDR, SIOCGIFCONF
// (IPv4 addresses) and the device-private range (EOPNOTSUPP).
//
// SIOCGIFADDR, SIOCGIFNETMASK, SIOCGIFBRDADDR and SIOCGIFDSTADDR belong to
// AF_INET sockets (inet_ioctl -> devinet_ioctl): on any other socket Linux
// answers ENOTTY, so InterfaceIoctl does too; the AF_INET family (#21)
// calls DevinetIoctl for them.
//
// The struct ifreq / ifconf are copied through the caller's guest memory
// (EFAULT when it is not accessible, as get_user_ifreq/put_user_ifreq).
#ifndef SENTRY_NET_STACK_IFIOCTL_H_
#define SENTRY_NET_STACK_IFIOCTL_H_

#include <stdint.h>

#include "sentry/base/result.h"
#include "sentry/net/stack/interfaces.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::net::stack {

// Whether `cmd` is one of the socket-level interface ioctls (type 0x89,
// is_socket_ioctl_cmd) that Socket::Ioctl hands to InterfaceIoctl.
bool IsInterfaceIoctl(uint32_t cmd);

// dev_ioctl for `cmd` with argument `arg` (a guest address). `net_admin`:
// the caller has CAP_NET_ADMIN (SIOCSIF*). ENOTTY for a command no device
// handles.
KResult<uint64_t> InterfaceIoctl(Interfaces& ifs, vfs::UserMemory* mem,
                                 bool net_admin, uint32_t cmd, uint64_t arg);

// devinet_ioctl's read side (SIOCGIFADDR, SIOCGIFNETMASK, SIOCGIFBRDADDR,
// SIOCGIFDSTADDR) for AF_INET sockets: EADDRNOTAVAIL without an IPv4
// address, ENODEV for an unknown name. ENOTTY for other commands.
KResult<uint64_t> DevinetIoctl(Interfaces& ifs, vfs::UserMemory* mem,
                               uint32_t cmd, uint64_t arg);

}  // namespace sandbox::net::stack

#endif  // SENTRY_NET_STACK_IFIOCTL_H_
