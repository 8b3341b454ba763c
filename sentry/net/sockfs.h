// sockfs: the anonymous file system of socket inodes (Linux's sock_mnt).
// Every socket has an inode number here (get_next_ino): fstat shows
// S_IFSOCK 0777 owned by the creator on sockfs's device, /proc/PID/fd/N
// reads "socket:[INO]", statfs gives SOCKFS_MAGIC.
#ifndef SENTRY_NET_SOCKFS_H_
#define SENTRY_NET_SOCKFS_H_

#include <stdint.h>

#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/mount.h"

namespace sandbox::net {

inline constexpr uint64_t kSockfsMagic = 0x534F434B;  // SOCKFS_MAGIC

// The one sockfs instance.
vfs::Filesystem& Sockfs();
// A new inode number (never reused while the Sentry runs).
uint64_t NextSockfsIno();
// A socket's place (its f_path): a new anonymous S_IFSOCK 0777 inode
// numbered `ino`, owned by uid:gid, on sockfs's internal mount (never
// attached to a mount tree). /proc/PID/fd/N jumps there; opening it is
// ENXIO, as for every socket inode.
vfs::VirtualDentry NewSockfsLocation(uint64_t ino, uint32_t uid, uint32_t gid);

}  // namespace sandbox::net

#endif  // SENTRY_NET_SOCKFS_H_
