// GoferClient: the typed, synchronous client side of one gofer connection
// (the Sentry's gofer file system uses it; tests drive the server with it).
//
//   gofer::GoferClient c(std::move(sock));
//   gofer::AttachResp root;
//   int err = c.Call(gofer::AttachReq{}, &root);           // 0 or an errno
//   gofer::UniqueFd fd;
//   err = c.Call(gofer::OpenReq{h, O_RDONLY}, &empty, &fd);  // donated FD
//
// The reply is untrusted too: Call returns EPROTO when it does not decode,
// does not fit its request (reply_check.h), echoes another request id, or
// carries a different number of FDs than the message type donates (those
// FDs are closed). After a transport error the
// connection is broken and every later Call returns EPIPE.
//
// Thread safety: Call may be used from many threads; one request is in
// flight at a time (mu_ serializes send + receive).
#ifndef GOFER_PROTOCOL_CLIENT_H_
#define GOFER_PROTOCOL_CLIENT_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gofer/protocol/codec.h"
#include "gofer/protocol/reply_check.h"
#include "gofer/protocol/transport.h"
#include "gofer/protocol/unique_fd.h"

namespace gofer {

class GoferClient {
 public:
  explicit GoferClient(UniqueFd sock) : sock_(std::move(sock)) {}

  // Sends req and waits for its reply. Returns 0 and fills *resp (and *fd
  // for Open/Create), or the Linux errno the server replied with, or
  // EPROTO/EPIPE for a broken connection.
  template <typename Req>
  int Call(const Req& req, typename Rpc<Req>::Reply* resp,
           UniqueFd* fd = nullptr) {
    Message reply;
    int err = RoundTrip(Rpc<Req>::kType, EncodeToString(req),
                        Rpc<Req>::kReplyFds, &reply);
    if (err != 0) return err;
    if (!Decode(reply.payload, resp) || !ReplyFits(req, *resp)) {
      return Broken();
    }
    if (Rpc<Req>::kReplyFds > 0 && fd != nullptr) *fd = std::move(reply.fds[0]);
    return 0;
  }

  // Sends raw bytes as a request of any type (for tests of hostile input).
  // Returns the reply's errno (0 on success), or EPROTO/EPIPE.
  int CallRaw(uint16_t type, std::string_view payload, Message* reply);

 private:
  int RoundTrip(MessageType type, std::string_view payload, int reply_fds,
                Message* reply);
  int Broken() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    broken_ = true;
    return EPROTO;
  }

  absl::Mutex mu_;
  const UniqueFd sock_;  // Used under mu_.
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gofer

#endif  // GOFER_PROTOCOL_CLIENT_H_
