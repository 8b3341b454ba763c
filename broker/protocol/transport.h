// Records over a connected AF_UNIX SOCK_SEQPACKET socket: one message per
// record, at most one descriptor (SCM_RIGHTS) with it. Both ends use these;
// a received record's descriptors are always taken (MSG_CMSG_CLOEXEC) and
// owned by the caller, so descriptors a peer should not have sent are
// closed, never leaked.
#ifndef BROKER_PROTOCOL_TRANSPORT_H_
#define BROKER_PROTOCOL_TRANSPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "broker/protocol/messages.h"
#include "gofer/protocol/unique_fd.h"

namespace sandbox::broker {

using gofer::UniqueFd;

// Sends `record` (at most kMaxRecord bytes) with `fd` if >= 0. Returns 0
// or an errno (EPIPE when the peer is gone; MSG_NOSIGNAL, no SIGPIPE).
// `flags` is added to sendmsg's (MSG_DONTWAIT for a sender that must not
// block).
int SendRecord(int sock, std::string_view record, int fd = -1, int flags = 0);

// Encodes and sends `m` with `fd` (which FdsFor(m) must ask for).
int SendMessage(int sock, const Message& m, int fd = -1, int flags = 0);

struct Received {
  Message message;
  UniqueFd fd;  // the message's descriptor, if its type has one
};

// Receives one record. Returns 0 with *out filled, ECONNRESET at the end of
// the connection, EBADMSG for a record that is not one valid message (too
// long, undecodable, or a descriptor count other than its type's; its
// descriptors are closed; the connection can go on), EAGAIN on a
// non-blocking socket with nothing to read, or recvmsg's errno.
int RecvMessage(int sock, Received* out, int flags = 0);

}  // namespace sandbox::broker

#endif  // BROKER_PROTOCOL_TRANSPORT_H_
