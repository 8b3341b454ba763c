#include "gofer/protocol/client.h"

#include <cerrno>

namespace gofer {

int GoferClient::CallRaw(uint16_t type, std::string_view payload,
                         Message* reply) {
  absl::MutexLock lock(&mu_);
  if (broken_) return EPIPE;
  Header h;
  h.type = type;
  h.request_id = next_id_++;
  int err = SendMessage(sock_.get(), h, payload);
  if (err != 0) {
    broken_ = true;
    return EPIPE;
  }
  err = RecvMessage(sock_.get(), reply);
  if (err == 0 && reply->header_error == EMFILE &&
      reply->header.request_id == h.request_id &&
      reply->header.flags == kFlagReply) {
    // The reply's FDs did not fit in this process (EMFILE): this call
    // fails, the connection stays usable. (Open's reply names no handle; a
    // Create's new handle stays in the Gofer until the connection ends.)
    reply->payload.clear();
    reply->fds.clear();
    return EMFILE;
  }
  if (err != 0 || reply->header_error != 0 ||
      reply->header.request_id != h.request_id ||
      reply->header.flags != kFlagReply) {
    broken_ = true;
    return EPROTO;
  }
  return static_cast<int>(reply->header.error);
}

int GoferClient::RoundTrip(MessageType type, std::string_view payload,
                           int reply_fds, Message* reply) {
  int err = CallRaw(static_cast<uint16_t>(type), payload, reply);
  if (err == EPROTO || err == EPIPE) {
    // Either a broken connection or the server's own EPROTO reply.
    absl::MutexLock lock(&mu_);
    if (broken_) return err;
  }
  if (reply->header.type != static_cast<uint16_t>(type)) return Broken();
  if (err != 0) {
    // Error replies carry no payload and no FDs.
    if (!reply->payload.empty() || !reply->fds.empty()) return Broken();
    return err;
  }
  if (reply->fds.size() != static_cast<size_t>(reply_fds)) return Broken();
  return 0;
}

}  // namespace gofer
