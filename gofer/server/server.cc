#include "gofer/server/server.h"

#include <cerrno>

#include "gofer/protocol/transport.h"

namespace gofer {
namespace {

int SendReply(int sock, const Header& req, const Reply& reply) {
  Header h;
  h.type = req.type;
  h.flags = kFlagReply;
  h.request_id = req.request_id;
  h.error = static_cast<uint32_t>(reply.error);
  if (reply.error != 0) return SendMessage(sock, h, {});
  std::vector<int> fds;
  if (reply.fd.valid()) fds.push_back(reply.fd.get());
  return SendMessage(sock, h, reply.payload, fds);
}

Reply ErrorReply(int err) {
  Reply r;
  r.error = err;
  return r;
}

}  // namespace

int ServeConnection(UniqueFd sock, UniqueFd root, ServerOptions options) {
  Session session(std::move(root), options);
  Message msg;
  for (;;) {
    int err = RecvMessage(sock.get(), &msg);
    if (err == ECONNRESET) return 0;
    if (err == EPROTO || err == EMSGSIZE) {
      SendReply(sock.get(), msg.header, ErrorReply(err));
      return err;
    }
    if (err != 0) return err;
    int bad = msg.header_error;
    if (bad == 0 &&
        (msg.header.flags != 0 || msg.header.error != 0 || !msg.fds.empty())) {
      bad = EINVAL;  // Requests carry no reply flag, errno or FDs.
    }
    msg.fds.clear();  // Closes any FD the client sent.
    Reply reply = bad != 0 ? ErrorReply(bad)
                           : session.Dispatch(msg.header.type, msg.payload);
    err = SendReply(sock.get(), msg.header, reply);
    if (err != 0) return err == EPIPE ? 0 : err;
  }
}

}  // namespace gofer
