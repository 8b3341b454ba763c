#include "gofer/protocol/transport.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "gofer/protocol/codec.h"

namespace gofer {
namespace {

// Room for more FDs than any message may carry: a peer that sends extra FDs
// has them delivered here (and closed) rather than truncated silently.
constexpr size_t kMaxRecvFds = 16;

// Reads exactly len bytes into buf, collecting SCM_RIGHTS FDs. Returns 0,
// ECONNRESET on end of stream, EINVAL if control data was truncated, or
// the recvmsg errno.
int RecvAll(int sock, char* buf, size_t len, std::vector<UniqueFd>* fds,
            bool* truncated) {
  size_t done = 0;
  while (done < len) {
    iovec iov{buf + done, len - done};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxRecvFds)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
         c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds->emplace_back(fd);
      }
    }
    if (msg.msg_flags & MSG_CTRUNC) *truncated = true;
    if (n == 0) return ECONNRESET;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

int SendMessage(int sock, Header header, std::string_view payload,
                const std::vector<int>& fds) {
  if (payload.size() > kMaxPayload || fds.size() > kMaxFdsPerMessage) {
    return EMSGSIZE;
  }
  header.payload_len = static_cast<uint32_t>(payload.size());
  header.num_fds = static_cast<uint16_t>(fds.size());
  std::string head = EncodeHeader(header);
  size_t total = head.size() + payload.size();
  size_t sent = 0;
  while (sent < total) {
    iovec iov[2];
    int iovcnt = 0;
    if (sent < head.size()) {
      iov[iovcnt++] = {head.data() + sent, head.size() - sent};
      iov[iovcnt++] = {const_cast<char*>(payload.data()), payload.size()};
    } else {
      size_t off = sent - head.size();
      iov[iovcnt++] = {const_cast<char*>(payload.data()) + off,
                       payload.size() - off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = iovcnt;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
    if (sent == 0 && !fds.empty()) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    sent += static_cast<size_t>(n);
  }
  return 0;
}

int RecvMessage(int sock, Message* out) {
  out->header = Header{};
  out->header_error = 0;
  out->payload.clear();
  out->fds.clear();
  bool truncated = false;
  char head[kHeaderSize];
  int err = RecvAll(sock, head, sizeof(head), &out->fds, &truncated);
  if (err != 0) return err;
  int herr = DecodeHeader(std::string_view(head, sizeof(head)), &out->header);
  if (herr == EPROTO || herr == EMSGSIZE) return herr;
  out->payload.resize(out->header.payload_len);
  err = RecvAll(sock, out->payload.data(), out->payload.size(), &out->fds,
                &truncated);
  if (err != 0) return err;
  if (herr == 0 && truncated && out->fds.size() < out->header.num_fds &&
      out->header.num_fds <= kMaxFdsPerMessage) {
    // The control buffer has room for every FD a message may carry, so the
    // kernel dropped FDs because this process had no free descriptor
    // (scm_detach_fds: MSG_CTRUNC). The framing is intact: the message is
    // refused with EMFILE and the connection goes on.
    herr = EMFILE;
  } else if (herr == 0 &&
             (truncated || out->fds.size() != out->header.num_fds)) {
    herr = EINVAL;
  }
  out->header_error = herr;
  return 0;
}

}  // namespace gofer
