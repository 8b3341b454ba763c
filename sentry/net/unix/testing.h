// Helpers for the AF_UNIX unit tests: Callers without a task, sockets made
// through the family, and send/receive of strings and descriptions.
#ifndef SENTRY_NET_UNIX_TESTING_H_
#define SENTRY_NET_UNIX_TESTING_H_

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/net/family.h"
#include "sentry/net/namespace.h"
#include "sentry/net/socket.h"
#include "sentry/net/unix/endpoint.h"
#include "sentry/net/unix/unix.h"

namespace sandbox::net::unix::testing {

// Guest memory that is the host's (ioctl arguments are host pointers).
class HostMemory final : public vfs::UserMemory {
 public:
  KResult<void> CopyInFull(uint64_t addr, void* dst, size_t n) override {
    memcpy(dst, reinterpret_cast<const void*>(addr), n);
    return OkResult();
  }
  KResult<void> CopyOutFull(uint64_t addr, const void* src, size_t n) override {
    memcpy(reinterpret_cast<void*>(addr), src, n);
    return OkResult();
  }
};

struct Received {
  KResult<size_t> n = size_t{0};
  std::string data;
  int msg_flags = 0;
  SockAddr from;
  ControlMessages control;
};

// Sockets of a test and the calls on them, as a mixin for fixtures.
class UnixHelper {
 public:
  void Init() {
    Register();
    c_.ucred = {42, 1000, 1000};
    c_.netns = &ns_;  // leaked: a socket may outlive the test
    c_.io.user = &mem_;
  }

  std::shared_ptr<UnixSocket> Make(int type, uint32_t flags = O_RDWR) {
    auto s = CreateSocket(c_, AF_UNIX, type, 0, flags);
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return nullptr;
    return std::static_pointer_cast<UnixSocket>(*s);
  }
  std::pair<std::shared_ptr<UnixSocket>, std::shared_ptr<UnixSocket>> MakePair(
      int type, uint32_t flags = O_RDWR) {
    auto p = CreateSocketPair(c_, AF_UNIX, type, 0, flags);
    EXPECT_TRUE(p.ok());
    if (!p.ok()) return {};
    return {std::static_pointer_cast<UnixSocket>(p->first),
            std::static_pointer_cast<UnixSocket>(p->second)};
  }

  static SockAddr Abstract(const std::string& name) {
    SockAddr a;
    uint16_t f = AF_UNIX;
    memcpy(a.bytes, &f, 2);
    a.bytes[2] = 0;
    memcpy(a.bytes + 3, name.data(), name.size());
    a.len = 3 + name.size();
    return a;
  }
  static SockAddr Path(const std::string& path) {
    SockAddr a;
    uint16_t f = AF_UNIX;
    memcpy(a.bytes, &f, 2);
    memcpy(a.bytes + 2, path.data(), path.size());
    a.len = 2 + path.size() + 1;
    return a;
  }
  static std::string NameOf(const SockAddr& a) {
    return std::string(reinterpret_cast<const char*>(a.bytes) + 2,
                       a.len > 2 ? a.len - 2 : 0);
  }

  KResult<size_t> Send(Socket& s, const std::string& data, int flags = 0,
                       std::vector<vfs::FileRef> rights = {},
                       const SockAddr* to = nullptr) {
    SpanIo io(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data.data()),
                                  data.size()));
    SendRequest req;
    req.flags = flags;
    req.control.rights = std::move(rights);
    if (to != nullptr) req.to = *to;
    return s.SendMsg(c_, io, req);
  }
  Received Recv(Socket& s, size_t size, int flags = 0) {
    Received r;
    std::vector<uint8_t> buf(size);
    SpanIo io(absl::MakeSpan(buf));
    RecvRequest req;
    req.flags = flags;
    req.want_from = true;
    r.n = s.RecvMsg(c_, io, req);
    if (r.n.ok()) {
      r.data.assign(reinterpret_cast<char*>(buf.data()), std::min(*r.n, size));
    }
    r.msg_flags = req.msg_flags;
    r.from = req.from;
    r.control = std::move(req.control);
    return r;
  }
  uint32_t Poll(Socket& s) { return s.Readiness(vfs::kAllEvents); }
  int32_t Ioctl(Socket& s, uint32_t cmd) {
    int32_t v = -1;
    auto r = s.SocketIoctl(c_, cmd, reinterpret_cast<uint64_t>(&v));
    EXPECT_TRUE(r.ok());
    return v;
  }

  NetNamespace& ns_ = *new NetNamespace;
  HostMemory mem_;
  Caller c_;
};

class UnixTest : public ::testing::Test, public UnixHelper {
 protected:
  void SetUp() override { Init(); }
};

}  // namespace sandbox::net::unix::testing

#endif  // SENTRY_NET_UNIX_TESTING_H_
