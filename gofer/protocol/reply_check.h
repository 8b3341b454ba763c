// ReplyFits(req, reply): semantic checks of a decoded reply against its
// request, on top of the decoder's bounds. The client (the Sentry) trusts
// the Gofer no more than the Gofer trusts it: a reply that does not fit
// its request breaks the connection (EPROTO) instead of reaching the VFS.
#ifndef GOFER_PROTOCOL_REPLY_CHECK_H_
#define GOFER_PROTOCOL_REPLY_CHECK_H_

#include <sys/stat.h>

#include <type_traits>

#include "gofer/protocol/codec.h"

namespace gofer {

// Default: the decoder's checks are all there is.
template <typename Req, typename Reply>
bool ReplyFits(const Req&, const Reply&) {
  return true;
}

inline bool NewInodeFits(const Inode& i) { return i.handle != 0; }

// Walk: at most one inode per name, new non-zero handles; a symlink stop
// ends on a symlink, an error stop is short of the full walk.
inline bool ReplyFits(const WalkReq& req, const WalkResp& r) {
  if (r.inodes.size() > req.names.size()) return false;
  for (const Inode& i : r.inodes) {
    if (!NewInodeFits(i)) return false;
  }
  switch (r.status) {
    case WalkStatus::kOk:
      return r.inodes.size() == req.names.size();
    case WalkStatus::kSymlink:
      return !r.inodes.empty() && S_ISLNK(r.inodes.back().stat.mode);
    case WalkStatus::kError:
      return r.inodes.size() < req.names.size();
  }
  return false;
}

inline bool ReplyFits(const WalkStatReq& req, const WalkStatResp& r) {
  if (r.stats.size() > req.names.size()) return false;
  switch (r.status) {
    case WalkStatus::kOk:
      return r.stats.size() == req.names.size();
    case WalkStatus::kSymlink:
      return !r.stats.empty() && S_ISLNK(r.stats.back().mode);
    case WalkStatus::kError:
      return r.stats.size() < req.names.size();
  }
  return false;
}

inline bool ReplyFits(const AttachReq&, const AttachResp& r) {
  return NewInodeFits(r.root) && S_ISDIR(r.root.stat.mode);
}

template <typename Req>
requires(std::is_same_v<typename Rpc<Req>::Reply, InodeResp>) bool ReplyFits(
    const Req&, const InodeResp& r) {
  return NewInodeFits(r.inode);
}

// BindSocket: the node made is a socket.
inline bool ReplyFits(const BindSocketReq&, const InodeResp& r) {
  return NewInodeFits(r.inode) && S_ISSOCK(r.inode.stat.mode);
}

inline bool ReplyFits(const GetdentsReq& req, const GetdentsResp& r) {
  return r.dirents.size() <= req.max_count;
}

// GetdentsPlus: at most max_count entries; each inode a new handle whose
// stat is of a real file type (the client checks the type again).
inline bool ReplyFits(const GetdentsPlusReq& req, const GetdentsPlusResp& r) {
  if (r.dirents.size() > req.max_count) return false;
  for (const DirentPlus& d : r.dirents) {
    if (d.has_inode && !NewInodeFits(d.inode)) return false;
  }
  return true;
}

inline bool ReplyFits(const GetXattrReq& req, const GetXattrResp& r) {
  return req.size == 0 ? r.value.empty() : r.length <= req.size;
}

inline bool ReplyFits(const ListXattrReq& req, const ListXattrResp& r) {
  if (req.size == 0) return r.names.empty();
  return r.length <= req.size && (r.names.empty() || r.names.back() == '\0');
}

inline bool ReplyFits(const ReadlinkReq&, const ReadlinkResp& r) {
  return !r.target.empty() && r.target.size() <= kMaxPathLen;
}

}  // namespace gofer

#endif  // GOFER_PROTOCOL_REPLY_CHECK_H_
