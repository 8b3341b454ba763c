// Encode and Decode of every gofer message (docs/gofer-protocol.md), both
// driven by the message's one field list (messages.h, fields.h).
//
// Decode(bytes, &msg) returns false unless the bytes are exactly one valid
// encoding of msg: every length within its bound, no trailing bytes, enum
// fields in range. It never reads out of bounds and never allocates more
// than the input's size justifies, whatever the input.
#ifndef GOFER_PROTOCOL_CODEC_H_
#define GOFER_PROTOCOL_CODEC_H_

#include <string>
#include <string_view>

#include "gofer/protocol/fields.h"
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

// Every message: its field list (messages.h) walked by fields.h.
template <HasFields T>
void Encode(Writer& w, const T& msg) {
  EncodeFields(w, msg);
}
template <HasFields T>
bool Decode(std::string_view in, T* msg) {
  Reader r(in);
  DecodeFields(r, msg);
  return r.Done();
}

// An empty payload (replies of Open, Unlink, Rename, SetAttr, ...).
struct Empty {
  template <class V>
  constexpr void Fields(V&) {}
};

static_assert(MinWireSize<Stat>() == 96);
static_assert(MinWireSize<Inode>() == kInodeWireSize);

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
