#include "sentry/vfs/permissions.h"

#include <sys/stat.h>

namespace sandbox::vfs {

KResult<void> CheckPermission(const Credentials& creds, int may, uint32_t mode,
                              uint32_t uid, uint32_t gid) {
  may &= kMayRead | kMayWrite | kMayExec;
  uint32_t bits;
  if (creds.fsuid == uid) {
    bits = (mode >> 6) & 7;
  } else if (creds.InGroup(gid)) {
    bits = (mode >> 3) & 7;
  } else {
    bits = mode & 7;
  }
  if ((may & ~bits) == 0) return OkResult();

  if (S_ISDIR(mode)) {
    if (!(may & kMayWrite) && creds.HasCapability(kernel::kCapDacReadSearch)) {
      return OkResult();
    }
    if (creds.HasCapability(kernel::kCapDacOverride)) return OkResult();
    return kEACCES;
  }
  if (may == kMayRead && creds.HasCapability(kernel::kCapDacReadSearch)) {
    return OkResult();
  }
  if ((!(may & kMayExec) || (mode & 0111)) &&
      creds.HasCapability(kernel::kCapDacOverride)) {
    return OkResult();
  }
  return kEACCES;
}

KResult<void> CheckPermission(const Credentials& creds, int may,
                              const Inode& inode) {
  Inode::PermAttrs a = inode.Perm();  // lock-free, as Linux's may_lookup
  return CheckPermission(creds, may, a.mode, a.uid, a.gid);
}

bool IsOwnerOrCapable(const Credentials& creds, uint32_t file_uid) {
  return creds.fsuid == file_uid || creds.HasCapability(kernel::kCapFowner);
}

KResult<void> CheckSticky(const Credentials& creds, const InodeAttrs& dir,
                          const InodeAttrs& victim) {
  if (!(dir.mode & S_ISVTX)) return OkResult();
  if (creds.fsuid == victim.uid || creds.fsuid == dir.uid) return OkResult();
  if (creds.HasCapability(kernel::kCapFowner)) return OkResult();
  return kEPERM;
}

NewInodeAttrs InitOwner(const Credentials& creds, const InodeAttrs& dir,
                        uint32_t mode) {
  NewInodeAttrs a;
  a.uid = creds.fsuid;
  if (dir.mode & S_ISGID) {
    a.gid = dir.gid;
    if (S_ISDIR(mode)) {
      mode |= S_ISGID;
    } else if ((mode & S_ISGID) && (mode & S_IXGRP) && !creds.InGroup(a.gid) &&
               !creds.HasCapability(kCapFsetid)) {
      mode &= ~S_ISGID;
    }
  } else {
    a.gid = creds.fsgid;
  }
  a.mode = mode;
  return a;
}

KResult<uint32_t> ChmodMode(const Credentials& creds, const InodeAttrs& attrs,
                            uint32_t new_mode) {
  if (!IsOwnerOrCapable(creds, attrs.uid)) return kEPERM;
  new_mode &= 07777;
  if ((new_mode & S_ISGID) && !creds.InGroup(attrs.gid) &&
      !creds.HasCapability(kCapFsetid)) {
    new_mode &= ~S_ISGID;
  }
  return new_mode;
}

KResult<void> PrepareChown(const Credentials& creds, const InodeAttrs& attrs,
                           uint32_t uid, uint32_t gid, SetAttrRequest* req) {
  constexpr uint32_t kUnchanged = static_cast<uint32_t>(-1);
  bool change_uid = uid != kUnchanged && uid != attrs.uid;
  bool change_gid = gid != kUnchanged && gid != attrs.gid;
  bool cap_chown = creds.HasCapability(kernel::kCapChown);
  // chown_ok: only CAP_CHOWN changes the owner.
  if (change_uid && !cap_chown) return kEPERM;
  // chgrp_ok: the owner may give the file to a group it is in.
  if (gid != kUnchanged && change_gid && !cap_chown &&
      !(creds.fsuid == attrs.uid && creds.InGroup(gid))) {
    return kEPERM;
  }
  // An unchanged uid/gid given explicitly still needs ownership rights
  // unless CAP_CHOWN (chown_ok: uid == inode uid and fsuid == inode uid).
  if (uid != kUnchanged && !change_uid && !cap_chown &&
      creds.fsuid != attrs.uid) {
    return kEPERM;
  }
  if (gid != kUnchanged && !change_gid && !cap_chown &&
      creds.fsuid != attrs.uid) {
    return kEPERM;
  }
  if (uid != kUnchanged) {
    req->mask |= SetAttrRequest::kUid;
    req->uid = uid;
  }
  if (gid != kUnchanged) {
    req->mask |= SetAttrRequest::kGid;
    req->gid = gid;
  }
  // chown_common + notify_change: any chown of a non-directory (even
  // chown(-1, -1), even by root) clears set-user-ID, and set-group-ID when
  // group-executable.
  if (!S_ISDIR(attrs.mode)) {
    uint32_t mode = attrs.mode & 07777;
    uint32_t kill = S_ISUID;
    if (mode & S_IXGRP) kill |= S_ISGID;
    if (mode & kill) {
      req->mask |= SetAttrRequest::kMode;
      req->mode = mode & ~kill;
    }
  }
  return OkResult();
}

uint32_t ModeAfterWrite(const Credentials& creds, uint32_t mode) {
  if (creds.HasCapability(kCapFsetid)) return mode;
  uint32_t kill = S_ISUID;
  if (mode & S_IXGRP) kill |= S_ISGID;
  return mode & ~kill;
}

}  // namespace sandbox::vfs
