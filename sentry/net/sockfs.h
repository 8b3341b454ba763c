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
// A new socket inode (S_IFSOCK 0777 owned by uid/gid, a new number) at an
// anonymous dentry of sockfs's internal mount: a socket's location, where
// /proc/PID/fd/N jumps (stat through the link is the socket's inode, chmod
// changes it, open is ENXIO as sock_no_open).
vfs::VirtualDentry NewSocketInode(uint32_t uid, uint32_t gid);

}  // namespace sandbox::net

#endif  // SENTRY_NET_SOCKFS_H_
