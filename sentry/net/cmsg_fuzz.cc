// Fuzzes the cmsg codec: the parser over arbitrary control buffers, and
// the receive side with what the parse gave (bounded buffer sizes from the
// input). Neither may crash, read out of bounds or lose a description.
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <memory>
#include <vector>

#include "sentry/net/cmsg.h"

namespace {

using sandbox::KResult;
using sandbox::net::ControlMessages;
using sandbox::vfs::FileRef;
namespace cmsg = sandbox::net::cmsg;

class Sink : public cmsg::RecvSink {
 public:
  explicit Sink(size_t n) : buf_(n) {}
  bool Write(size_t at, const void* src, size_t n) override {
    if (at > buf_.size() || n > buf_.size() - at) __builtin_trap();
    memcpy(buf_.data() + at, src, n);
    return true;
  }
  KResult<int> InstallFd(const FileRef&, bool) override {
    if (installed_ >= 64) return sandbox::kEMFILE;
    return installed_++;
  }
  void RemoveFd(int) override { --installed_; }

 private:
  std::vector<uint8_t> buf_;
  int installed_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const FileRef file =
      std::make_shared<sandbox::vfs::FileDescription>(O_RDWR);
  cmsg::SendContext ctx;
  ctx.family = (size & 1) ? AF_UNIX : AF_NETLINK;
  ctx.creds.tgid = 1;
  ctx.get_file = [](int fd) -> KResult<FileRef> {
    if (fd > 16) return sandbox::kEBADF;
    return file;
  };
  ctx.pid_exists = [](int32_t pid) { return pid == 1; };
  KResult<ControlMessages> r = cmsg::ParseSend({data, size}, ctx);
  if (!r.ok()) return 0;
  ControlMessages cm = std::move(r.value());
  if (cm.rights.size() > cmsg::kScmMaxFd) __builtin_trap();
  const size_t room = size == 0 ? 0 : data[0];
  Sink sink(room);
  cmsg::RecvResult out = cmsg::PutReceived(cm, true, room, false, sink);
  if (out.controllen > room) __builtin_trap();
  return 0;
}
