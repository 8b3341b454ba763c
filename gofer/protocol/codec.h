// Encoders and decoders for every gofer message (docs/gofer-protocol.md).
//
// Decode(bytes, &msg) returns false unless the bytes are exactly one valid
// encoding of msg: every length within its bound, no trailing bytes, enum
// fields in range. It never reads out of bounds and never allocates more
// than the input's size justifies, whatever the input.
#ifndef GOFER_PROTOCOL_CODEC_H_
#define GOFER_PROTOCOL_CODEC_H_

#include <string>
#include <string_view>

#include "gofer/protocol/messages.h"
#include "gofer/protocol/wire.h"

namespace gofer {

// Header: exactly kHeaderSize bytes.
std::string EncodeHeader(const Header& h);
// Returns 0, or the errno to report: EPROTO (bad magic or reserved field),
// EPROTONOSUPPORT (other version), EMSGSIZE (payload_len > kMaxPayload),
// EINVAL (unknown flags, too many FDs). h is filled whenever the magic
// matched, so a reply can echo the request id.
int DecodeHeader(std::string_view bytes, Header* h);

#define GOFER_CODEC(T)                  \
  void Encode(Writer& w, const T& msg); \
  bool Decode(std::string_view in, T* msg);
GOFER_CODEC(AttachReq)
GOFER_CODEC(AttachResp)
GOFER_CODEC(WalkReq)
GOFER_CODEC(WalkResp)
GOFER_CODEC(WalkStatReq)
GOFER_CODEC(WalkStatResp)
GOFER_CODEC(StatReq)
GOFER_CODEC(StatResp)
GOFER_CODEC(OpenReq)
GOFER_CODEC(CreateReq)
GOFER_CODEC(InodeResp)
GOFER_CODEC(MkdirReq)
GOFER_CODEC(MknodReq)
GOFER_CODEC(SymlinkReq)
GOFER_CODEC(LinkReq)
GOFER_CODEC(ReadlinkReq)
GOFER_CODEC(ReadlinkResp)
GOFER_CODEC(UnlinkReq)
GOFER_CODEC(RenameReq)
GOFER_CODEC(SetAttrReq)
GOFER_CODEC(GetdentsReq)
GOFER_CODEC(GetdentsResp)
GOFER_CODEC(GetdentsPlusReq)
GOFER_CODEC(GetdentsPlusResp)
GOFER_CODEC(StatfsReq)
GOFER_CODEC(StatfsResp)
GOFER_CODEC(FsyncReq)
GOFER_CODEC(GetXattrReq)
GOFER_CODEC(GetXattrResp)
GOFER_CODEC(SetXattrReq)
GOFER_CODEC(ListXattrReq)
GOFER_CODEC(ListXattrResp)
GOFER_CODEC(RemoveXattrReq)
GOFER_CODEC(CloseReq)
GOFER_CODEC(BindSocketReq)
GOFER_CODEC(ConnectSocketReq)
#undef GOFER_CODEC

// An empty payload (replies of Open, Unlink, Rename, SetAttr, ...).
struct Empty {};
inline void Encode(Writer&, const Empty&) {}
inline bool Decode(std::string_view in, Empty*) { return in.empty(); }

// Request type -> message type, reply type and donated FD count.
template <typename Req>
struct Rpc;
#define GOFER_RPC(Req, Type, Resp, Fds)                     \
  template <>                                               \
  struct Rpc<Req> {                                         \
    static constexpr MessageType kType = MessageType::Type; \
    using Reply = Resp;                                     \
    static constexpr int kReplyFds = Fds;                   \
  };
GOFER_RPC(AttachReq, kAttach, AttachResp, 0)
GOFER_RPC(WalkReq, kWalk, WalkResp, 0)
GOFER_RPC(WalkStatReq, kWalkStat, WalkStatResp, 0)
GOFER_RPC(StatReq, kStat, StatResp, 0)
GOFER_RPC(OpenReq, kOpen, Empty, 1)
GOFER_RPC(CreateReq, kCreate, InodeResp, 1)
GOFER_RPC(MkdirReq, kMkdir, InodeResp, 0)
GOFER_RPC(MknodReq, kMknod, InodeResp, 0)
GOFER_RPC(SymlinkReq, kSymlink, InodeResp, 0)
GOFER_RPC(LinkReq, kLink, InodeResp, 0)
GOFER_RPC(ReadlinkReq, kReadlink, ReadlinkResp, 0)
GOFER_RPC(UnlinkReq, kUnlink, Empty, 0)
GOFER_RPC(RenameReq, kRename, Empty, 0)
GOFER_RPC(SetAttrReq, kSetAttr, Empty, 0)
GOFER_RPC(GetdentsReq, kGetdents, GetdentsResp, 0)
GOFER_RPC(GetdentsPlusReq, kGetdentsPlus, GetdentsPlusResp, 0)
GOFER_RPC(StatfsReq, kStatfs, StatfsResp, 0)
GOFER_RPC(FsyncReq, kFsync, Empty, 0)
GOFER_RPC(GetXattrReq, kGetXattr, GetXattrResp, 0)
GOFER_RPC(SetXattrReq, kSetXattr, Empty, 0)
GOFER_RPC(ListXattrReq, kListXattr, ListXattrResp, 0)
GOFER_RPC(RemoveXattrReq, kRemoveXattr, Empty, 0)
GOFER_RPC(CloseReq, kClose, Empty, 0)
GOFER_RPC(BindSocketReq, kBindSocket, InodeResp, 1)
GOFER_RPC(ConnectSocketReq, kConnectSocket, Empty, 1)
#undef GOFER_RPC

template <typename T>
std::string EncodeToString(const T& msg) {
  Writer w;
  Encode(w, msg);
  return w.Take();
}

}  // namespace gofer

#endif  // GOFER_PROTOCOL_CODEC_H_
