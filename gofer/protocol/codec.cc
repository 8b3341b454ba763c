// Message type names and the header (every payload's Encode and Decode
// are codec.h's templates over the messages' field lists).
#include "gofer/protocol/codec.h"

#include <cerrno>

namespace gofer {

const char* MessageTypeName(MessageType t) {
  switch (t) {
    case MessageType::kAttach:
      return "Attach";
    case MessageType::kWalk:
      return "Walk";
    case MessageType::kWalkStat:
      return "WalkStat";
    case MessageType::kStat:
      return "Stat";
    case MessageType::kOpen:
      return "Open";
    case MessageType::kCreate:
      return "Create";
    case MessageType::kMkdir:
      return "Mkdir";
    case MessageType::kMknod:
      return "Mknod";
    case MessageType::kSymlink:
      return "Symlink";
    case MessageType::kLink:
      return "Link";
    case MessageType::kReadlink:
      return "Readlink";
    case MessageType::kUnlink:
      return "Unlink";
    case MessageType::kRename:
      return "Rename";
    case MessageType::kSetAttr:
      return "SetAttr";
    case MessageType::kGetdents:
      return "Getdents";
    case MessageType::kGetdentsPlus:
      return "GetdentsPlus";
    case MessageType::kStatfs:
      return "Statfs";
    case MessageType::kFsync:
      return "Fsync";
    case MessageType::kGetXattr:
      return "GetXattr";
    case MessageType::kSetXattr:
      return "SetXattr";
    case MessageType::kListXattr:
      return "ListXattr";
    case MessageType::kRemoveXattr:
      return "RemoveXattr";
    case MessageType::kClose:
      return "Close";
    case MessageType::kBindSocket:
      return "BindSocket";
    case MessageType::kConnectSocket:
      return "ConnectSocket";
  }
  return "Unknown";
}

std::string EncodeHeader(const Header& h) { return EncodeToString(h); }

int DecodeHeader(std::string_view bytes, Header* h) {
  if (bytes.size() != kHeaderSize) return EPROTO;
  Reader r(bytes);
  DecodeFields(r, h);
  if (!r.Done() || h->magic != kMagic || h->reserved != 0) return EPROTO;
  if (h->version != kVersion) return EPROTONOSUPPORT;
  if (h->payload_len > kMaxPayload) return EMSGSIZE;
  if ((h->flags & ~kFlagReply) != 0) return EINVAL;
  if (h->num_fds > kMaxFdsPerMessage) return EINVAL;
  return 0;
}

}  // namespace gofer
