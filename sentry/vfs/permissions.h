// DAC permission checks as Linux makes them (fs/namei.c generic_permission,
// may_delete, may_create; fs/attr.c setattr_prepare; inode_init_owner).
//
// Pure functions of the caller's Credentials and an inode's attributes; the
// caller holds whatever lock makes the attributes current.
#ifndef SENTRY_VFS_PERMISSIONS_H_
#define SENTRY_VFS_PERMISSIONS_H_

#include <stdint.h>

#include "sentry/base/result.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/inode.h"

namespace sandbox::vfs {

using kernel::Credentials;

// MAY_* access bits (a subset of Linux's).
inline constexpr int kMayExec = 1;
inline constexpr int kMayWrite = 2;
inline constexpr int kMayRead = 4;

// Capabilities used here and not (yet) named in credentials.h.
inline constexpr int kCapFsetid = 4;
inline constexpr int kCapMknod = 27;

// generic_permission: EACCES unless `creds` may access (`may`: kMay* bits)
// a file with `mode`, `uid`, `gid`. Honors CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH as Linux does (DAC_OVERRIDE grants exec on a
// non-directory only if some exec bit is set).
KResult<void> CheckPermission(const Credentials& creds, int may, uint32_t mode,
                              uint32_t uid, uint32_t gid);
KResult<void> CheckPermission(const Credentials& creds, int may,
                              const Inode& inode);

// inode_owner_or_capable: fsuid owns the file, or CAP_FOWNER.
bool IsOwnerOrCapable(const Credentials& creds, uint32_t file_uid);

// The sticky-directory rule of may_delete (EPERM when it forbids):
// in a sticky directory only the file's owner, the directory's owner, or
// CAP_FOWNER may remove or rename an entry.
KResult<void> CheckSticky(const Credentials& creds, const InodeAttrs& dir,
                          const InodeAttrs& victim);

// Owner and mode of a new inode in `dir` (inode_init_owner): uid = fsuid;
// gid = dir's gid if dir is setgid (and new directories inherit S_ISGID),
// else fsgid; a non-directory keeps S_ISGID only if the caller is in its
// group or has CAP_FSETID. `mode` is the requested type|permissions with
// the umask already applied.
NewInodeAttrs InitOwner(const Credentials& creds, const InodeAttrs& dir,
                        uint32_t mode);

// chmod: EPERM unless owner or CAP_FOWNER; returns the mode bits to store
// (S_ISGID dropped if the caller is not in the file's group and lacks
// CAP_FSETID).
KResult<uint32_t> ChmodMode(const Credentials& creds, const InodeAttrs& attrs,
                            uint32_t new_mode);

// chown: fills `req` (uid/gid, and mode when set-id bits must be cleared)
// or EPERM. `uid`/`gid` of -1 mean unchanged.
KResult<void> PrepareChown(const Credentials& creds, const InodeAttrs& attrs,
                           uint32_t uid, uint32_t gid, SetAttrRequest* req);

// The mode a write or truncate by `creds` leaves (file_remove_privs):
// S_ISUID dropped, S_ISGID dropped if group-executable, unless CAP_FSETID.
// Returns `mode` unchanged when nothing is to drop.
uint32_t ModeAfterWrite(const Credentials& creds, uint32_t mode);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_PERMISSIONS_H_
