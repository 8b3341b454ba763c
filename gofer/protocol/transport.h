// Framing over a connected SOCK_STREAM Unix socket: one message is a header
// and its payload; FDs ride as SCM_RIGHTS on the message's first bytes.
//
// Both ends use these functions; neither trusts the other. A received
// message's FDs are always taken (MSG_CMSG_CLOEXEC) and owned by the
// Message, so FDs a peer should not have sent are closed, never leaked.
#ifndef GOFER_PROTOCOL_TRANSPORT_H_
#define GOFER_PROTOCOL_TRANSPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "gofer/protocol/messages.h"
#include "gofer/protocol/unique_fd.h"

namespace gofer {

struct Message {
  Header header;
  // 0, or why this message must be refused although its framing is intact
  // (EPROTONOSUPPORT, EINVAL: unknown flags or FD count not as declared;
  // EMFILE: the receiver had no free descriptor for its FDs).
  int header_error = 0;
  std::string payload;
  std::vector<UniqueFd> fds;
};

// Sends header (payload_len and num_fds are set here) + payload + fds.
// Returns 0 or an errno (EPIPE when the peer is gone).
int SendMessage(int sock, Header header, std::string_view payload,
                const std::vector<int>& fds = {});

// Receives one message. Returns 0 when *out holds a whole message (check
// out->header_error), or an errno when the connection can no longer be used:
// ECONNRESET at end of stream, EPROTO (bad magic) or EMSGSIZE (payload over
// kMaxPayload) when framing is lost (out->header then holds what was read,
// for a best-effort error reply), or the recvmsg errno.
int RecvMessage(int sock, Message* out);

}  // namespace gofer

#endif  // GOFER_PROTOCOL_TRANSPORT_H_
