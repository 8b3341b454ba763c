// anon_inodefs: the one inode that anonymous files share (eventfd, epoll,
// timerfd, signalfd; Linux's anon_inode_getfile). fstat of such a file shows
// it: mode 0600 with no file type bits (alloc_anon_inode), owned by root, on
// the anon_inodefs device; /proc/PID/fd/N reads "anon_inode:[NAME]".
#ifndef SENTRY_FS_ANON_ANON_INODE_H_
#define SENTRY_FS_ANON_ANON_INODE_H_

#include "sentry/abi/linux.h"

namespace sandbox::fs::anon {

abi::Stat AnonInodeStat();

}  // namespace sandbox::fs::anon

#endif  // SENTRY_FS_ANON_ANON_INODE_H_
