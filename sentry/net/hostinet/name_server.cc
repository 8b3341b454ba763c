#include "sentry/net/hostinet/name_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/log.h"
#include "sentry/net/family.h"
#include "sentry/net/hostinet/broker_client.h"
#include "sentry/net/hostinet/resolver.h"
#include "sentry/vfs/operations.h"

namespace sandbox::net::hostinet {
namespace {

class NameServer {
 public:
  NameServer(NetNamespace& ns, SocketRef sock)
      : ns_(ns),
        sock_(std::move(sock)),
        stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~NameServer() {
    stop_ = true;
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
    close(stop_fd_);
  }

 private:
  void Run() {
    std::vector<uint8_t> buf(4096);
    while (!stop_) {
      Caller c;
      c.netns = &ns_;
      c.io.interrupt_fd = stop_fd_;
      SpanIo io(absl::MakeSpan(buf));
      RecvRequest req;
      req.want_from = true;
      KResult<size_t> n = sock_->RecvMsg(c, io, req);
      if (!n.ok()) continue;  // interrupted (stopping) or a transient error
      BrokerClient* b = BrokerClient::Instance();
      if (b == nullptr) continue;
      std::vector<uint8_t> resp = AnswerQuery(
          *b, c,
          std::span<const uint8_t>(buf.data(), std::min(*n, buf.size())));
      if (resp.empty()) continue;
      SpanIo out(absl::MakeConstSpan(resp));
      SendRequest sreq;
      sreq.to = req.from;
      sreq.flags = MSG_DONTWAIT;
      (void)sock_->SendMsg(c, out, sreq);
    }
  }

  NetNamespace& ns_;
  const SocketRef sock_;
  const int stop_fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::atomic<NameServer*> g_server{nullptr};

}  // namespace

bool StartNameServer(NetNamespace& ns) {
  Caller c;
  c.netns = &ns;
  KResult<SocketRef> s = CreateSocket(c, AF_INET, SOCK_DGRAM, 0, O_RDWR);
  if (!s.ok()) {
    kernel::LogWarning("name server: socket: %s", s.error().message());
    return false;
  }
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  inet_pton(AF_INET, kNameServerAddr, &a.sin_addr);
  KResult<void> b = (*s)->Bind(c, SockAddr::From(&a, sizeof(a)));
  if (!b.ok()) {
    kernel::LogWarning("name server: bind %s:53: %s", kNameServerAddr,
                       b.error().message());
    return false;
  }
  SocketRef sock = std::move(s).value();
  delete g_server.exchange(new NameServer(ns, std::move(sock)));
  return true;
}

void StopNameServer() { delete g_server.exchange(nullptr); }

KResult<void> WriteResolvConf(const vfs::ResolveBase& base) {
  // A symlink (to the host's /run/...) is replaced, not followed.
  (void)vfs::UnlinkAt(base, "/etc/resolv.conf", 0);
  TRY(std::shared_ptr<vfs::VfsFile> f,
      vfs::OpenAt(base, "/etc/resolv.conf",
                  O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW, 0644, 0));
  const std::string text = absl::StrCat(
      "# The sandbox's name server (runsc do --network=host with an egress\n"
      "# policy): it answers only the names the policy allows.\n"
      "nameserver ",
      kNameServerAddr, "\n");
  vfs::IoContext ctx;
  size_t done = 0;
  while (done < text.size()) {
    TRY(size_t n,
        f->Write(ctx, absl::MakeConstSpan(
                          reinterpret_cast<const uint8_t*>(text.data() + done),
                          text.size() - done)));
    if (n == 0) return kENOSPC;
    done += n;
  }
  return OkResult();
}

}  // namespace sandbox::net::hostinet
