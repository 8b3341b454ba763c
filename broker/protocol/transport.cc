#include "broker/protocol/transport.h"

#include <errno.h>
#include <sys/socket.h>

#include <cstring>

#include "broker/protocol/codec.h"

namespace sandbox::broker {

int SendRecord(int sock, std::string_view record, int fd, int flags) {
  if (record.size() > kMaxRecord) return EMSGSIZE;
  iovec iov = {const_cast<char*>(record.data()), record.size()};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  }
  for (;;) {
    ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
    if (n >= 0) return static_cast<size_t>(n) == record.size() ? 0 : EMSGSIZE;
    if (errno != EINTR) return errno;
  }
}

int SendMessage(int sock, const Message& m, int fd, int flags) {
  return SendRecord(sock, Encode(m), fd, flags);
}

int RecvMessage(int sock, Received* out, int flags) {
  // One byte more than the largest record, to see one that is too long.
  char buf[kMaxRecord + 1];
  // Room for more descriptors than any message has, so that a peer's extra
  // ones are taken (and closed) rather than left in the kernel.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)];
  iovec iov = {buf, sizeof(buf)};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof(control);
  ssize_t n;
  for (;;) {
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
    if (n >= 0) break;
    if (errno != EINTR) return errno;
  }
  std::vector<UniqueFd> fds;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr;
       cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
        cm->cmsg_len < CMSG_LEN(0)) {
      continue;
    }
    const size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
  // A zero-length record is the end of the connection (SOCK_SEQPACKET
  // gives 0 at EOF; no valid message is empty).
  if (n == 0 && fds.empty()) return ECONNRESET;
  if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return EBADMSG;
  *out = Received();
  if (!Decode(std::string_view(buf, static_cast<size_t>(n)), &out->message) ||
      static_cast<int>(fds.size()) != FdsFor(out->message)) {
    return EBADMSG;
  }
  if (!fds.empty()) out->fd = std::move(fds[0]);
  return 0;
}

}  // namespace sandbox::broker
