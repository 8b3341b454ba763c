#include "sentry/boot/boot_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sentry/boot/boot_spec.pb.h"

namespace sandbox::boot {
namespace {

// The frame: "RSB" and the format's version ('5': a protobuf message;
// '1' to '4' were a hand-written layout), the message's length (u32,
// little-endian), the message.
constexpr char kMagic[4] = {'R', 'S', 'B', '5'};
constexpr size_t kHeaderSize = sizeof(kMagic) + sizeof(uint32_t);
// The largest frame read. argv and envp together are at most 6 MiB on
// Linux (3/4 of _STK_LIM), the rest a few KiB; the bound keeps what the
// parser allocates before the counts below are checked to a small
// multiple of it.
constexpr size_t kMaxSize = 64 << 20;
constexpr int kMaxStrings = 1 << 20;
// A published port's host endpoint, for logs: "[v6addr%zone]:port".
constexpr size_t kMaxHostEndpoint = 64;

// The struct's enums and the message's have the same values.
constexpr int I(auto e) { return static_cast<int>(e); }
static_assert(I(SeedEntry::kDir) == I(wire::SeedEntry::KIND_DIR) &&
              I(SeedEntry::kFile) == I(wire::SeedEntry::KIND_FILE) &&
              I(SeedEntry::kTmpfsMount) ==
                  I(wire::SeedEntry::KIND_TMPFS_MOUNT));
static_assert(I(RootKind::kTmpfs) == I(wire::ROOT_TMPFS) &&
              I(RootKind::kGofer) == I(wire::ROOT_GOFER) &&
              I(RootKind::kGoferReadOnly) == I(wire::ROOT_GOFER_READ_ONLY));
static_assert(I(NetworkMode::kNone) == I(wire::NETWORK_NONE) &&
              I(NetworkMode::kHost) == I(wire::NETWORK_HOST));
static_assert(I(PublishedPort::kTcp) == I(wire::PublishedPort::PROTO_TCP) &&
              I(PublishedPort::kUdp) == I(wire::PublishedPort::PROTO_UDP));

absl::Status Bad(std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("boot spec: ", absl::string_view(what.data(), what.size())));
}

// An optional FD field: absent is -1; present, it must be an FD.
absl::StatusOr<int32_t> Fd(bool has, int32_t fd, std::string_view name) {
  if (!has) return -1;
  if (fd < 0) return Bad(std::string(name) + ": negative FD");
  return fd;
}

wire::BootSpec ToWire(const BootSpec& spec) {
  wire::BootSpec w;
  w.set_exe_path(spec.exe_path);
  w.set_cwd(spec.cwd);
  for (const std::string& a : spec.argv) w.add_argv(a);
  for (const std::string& e : spec.envp) w.add_envp(e);
  w.set_hostname(spec.hostname);
  w.set_debug_log(spec.debug_log);
  w.set_log(spec.log);
  w.set_log_json(spec.log_json);
  w.set_warn_unsupported(spec.warn_unsupported);
  w.set_strace(spec.strace);
  w.set_strace_summary(spec.strace_summary);
  w.set_unconfined(spec.unconfined);
  w.set_debug_seccomp(spec.debug_seccomp);
  for (const SeedEntry& e : spec.seed) {
    wire::SeedEntry* we = w.add_seed();
    we->set_kind(static_cast<wire::SeedEntry::Kind>(e.kind));
    we->set_path(e.path);
    we->set_mode(e.mode);
    we->set_uid(e.uid);
    we->set_gid(e.gid);
    if (e.host_fd >= 0) we->set_host_fd(e.host_fd);
  }
  w.set_root(static_cast<wire::RootKind>(spec.root));
  if (spec.root_gofer_fd >= 0) w.set_root_gofer_fd(spec.root_gofer_fd);
  for (const GoferMount& m : spec.gofer_mounts) {
    wire::GoferMount* wm = w.add_gofer_mounts();
    wm->set_path(m.path);
    if (m.fd >= 0) wm->set_fd(m.fd);
    wm->set_read_only(m.read_only);
    wm->set_shared(m.shared);
    wm->set_suid(m.suid);
    wm->set_host_sockets(m.host_sockets);
  }
  w.set_memory_limit(spec.memory_limit);
  w.set_pids_limit(spec.pids_limit);
  if (spec.broker_fd >= 0) w.set_broker_fd(spec.broker_fd);
  w.set_network(static_cast<wire::NetworkMode>(spec.network));
  w.set_egress_policy(spec.egress_policy);
  for (const PublishedPort& p : spec.published) {
    wire::PublishedPort* wp = w.add_published();
    wp->set_proto(static_cast<wire::PublishedPort::Proto>(p.proto));
    wp->set_guest_port(p.guest_port);
    wp->set_host(p.host);
  }
  return w;
}

// The message checked field by field (enums in range, FDs where they are
// needed, counts bounded, paths absolute) into the struct.
absl::StatusOr<BootSpec> FromWire(const wire::BootSpec& w) {
  BootSpec spec;
  if (w.argv_size() > kMaxStrings || w.envp_size() > kMaxStrings ||
      w.seed_size() > kMaxStrings) {
    return Bad("too many argv, envp or seed entries");
  }
  spec.exe_path = w.exe_path();
  spec.cwd = w.cwd();
  spec.argv.assign(w.argv().begin(), w.argv().end());
  spec.envp.assign(w.envp().begin(), w.envp().end());
  spec.hostname = w.hostname();
  spec.debug_log = w.debug_log();
  spec.log = w.log();
  spec.log_json = w.log_json();
  spec.warn_unsupported = w.warn_unsupported();
  spec.strace = w.strace();
  spec.strace_summary = w.strace_summary();
  spec.unconfined = w.unconfined();
  spec.debug_seccomp = w.debug_seccomp();

  for (const wire::SeedEntry& we : w.seed()) {
    SeedEntry e;
    switch (we.kind()) {
      case wire::SeedEntry::KIND_DIR:
      case wire::SeedEntry::KIND_FILE:
      case wire::SeedEntry::KIND_TMPFS_MOUNT:
        e.kind = static_cast<SeedEntry::Kind>(we.kind());
        break;
      default:
        return Bad(absl::StrCat("seed entry of unknown kind ", we.kind()));
    }
    e.path = we.path();
    e.mode = we.mode();
    e.uid = we.uid();
    e.gid = we.gid();
    absl::StatusOr<int32_t> fd = Fd(we.has_host_fd(), we.host_fd(), "seed");
    if (!fd.ok()) return fd.status();
    e.host_fd = *fd;
    spec.seed.push_back(std::move(e));
  }

  switch (w.root()) {
    case wire::ROOT_TMPFS:
    case wire::ROOT_GOFER:
    case wire::ROOT_GOFER_READ_ONLY:
      spec.root = static_cast<RootKind>(w.root());
      break;
    default:
      return Bad(absl::StrCat("unknown root kind ", w.root()));
  }
  absl::StatusOr<int32_t> root_fd =
      Fd(w.has_root_gofer_fd(), w.root_gofer_fd(), "root_gofer_fd");
  if (!root_fd.ok()) return root_fd.status();
  spec.root_gofer_fd = *root_fd;
  if (spec.root != RootKind::kTmpfs && spec.root_gofer_fd < 0) {
    return Bad("a Gofer root without its connection (root_gofer_fd)");
  }
  if (w.gofer_mounts_size() > static_cast<int>(kMaxGoferMounts)) {
    return Bad("too many Gofer mounts");
  }
  for (const wire::GoferMount& wm : w.gofer_mounts()) {
    GoferMount m;
    m.path = wm.path();
    if (m.path.empty() || m.path[0] != '/') {
      return Bad("a Gofer mount's path is not absolute");
    }
    if (!wm.has_fd() || wm.fd() < 0) {
      return Bad(absl::StrCat("the Gofer mount at ", m.path,
                              " has no connection (fd)"));
    }
    m.fd = wm.fd();
    m.read_only = wm.read_only();
    m.shared = wm.shared();
    m.suid = wm.suid();
    m.host_sockets = wm.host_sockets();
    spec.gofer_mounts.push_back(std::move(m));
  }

  spec.memory_limit = w.memory_limit();
  spec.pids_limit = w.pids_limit();

  absl::StatusOr<int32_t> broker_fd =
      Fd(w.has_broker_fd(), w.broker_fd(), "broker_fd");
  if (!broker_fd.ok()) return broker_fd.status();
  spec.broker_fd = *broker_fd;
  switch (w.network()) {
    case wire::NETWORK_NONE:
    case wire::NETWORK_HOST:
      spec.network = static_cast<NetworkMode>(w.network());
      break;
    default:
      return Bad(absl::StrCat("unknown network mode ", w.network()));
  }
  spec.egress_policy = w.egress_policy();
  // Host mode and published ports need the broker.
  if ((spec.network == NetworkMode::kHost || w.published_size() > 0) &&
      spec.broker_fd < 0) {
    return Bad("host network or published ports without a broker_fd");
  }
  if (w.published_size() > static_cast<int>(kMaxPublishedPorts)) {
    return Bad("too many published ports");
  }
  for (const wire::PublishedPort& wp : w.published()) {
    PublishedPort p;
    if (wp.proto() != wire::PublishedPort::PROTO_TCP &&
        wp.proto() != wire::PublishedPort::PROTO_UDP) {
      return Bad(
          absl::StrCat("published port of unknown protocol ", wp.proto()));
    }
    if (wp.guest_port() == 0 || wp.guest_port() > 65535) {
      return Bad(absl::StrCat("published guest port ", wp.guest_port()));
    }
    if (wp.host().size() > kMaxHostEndpoint) {
      return Bad("a published port's host endpoint is too long");
    }
    p.proto = static_cast<PublishedPort::Proto>(wp.proto());
    p.guest_port = static_cast<uint16_t>(wp.guest_port());
    p.host = wp.host();
    spec.published.push_back(std::move(p));
  }
  return spec;
}

}  // namespace

std::string SerializeBootSpec(const BootSpec& spec) {
  const std::string message = ToWire(spec).SerializeAsString();
  std::string out(kMagic, sizeof(kMagic));
  const uint32_t n = static_cast<uint32_t>(message.size());
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  out.append(message);
  return out;
}

absl::StatusOr<BootSpec> ParseBootSpec(const std::string& data) {
  if (data.size() > kMaxSize) return Bad("too large");
  if (data.size() < kHeaderSize ||
      memcmp(data.data(), kMagic, sizeof(kMagic) - 1) != 0) {
    return Bad("bad magic or size");
  }
  if (data[3] != kMagic[3]) {
    return Bad(absl::StrCat("format version '", data.substr(3, 1),
                            "', expected '", std::string(1, kMagic[3]),
                            "' (runsc do and runsc boot differ)"));
  }
  uint32_t n;
  memcpy(&n, data.data() + sizeof(kMagic), sizeof(n));
  if (n != data.size() - kHeaderSize) {
    return Bad(absl::StrCat(
        n > data.size() - kHeaderSize ? "truncated" : "trailing bytes",
        ": the message has ", data.size() - kHeaderSize,
        " bytes, its header says ", n));
  }
  wire::BootSpec w;
  if (!w.ParseFromArray(data.data() + kHeaderSize, static_cast<int>(n))) {
    return Bad("malformed (not a BootSpec message)");
  }
  return FromWire(w);
}

absl::StatusOr<int> WriteBootSpecToMemfd(const BootSpec& spec) {
  std::string data = SerializeBootSpec(spec);
  int fd = memfd_create("runsc-boot-spec", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::ErrnoToStatus(errno, "memfd_create");
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      close(fd);
      return absl::ErrnoToStatus(e, "write(boot spec memfd)");
    }
    off += n;
  }
  fcntl(fd, F_ADD_SEALS,
        F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

absl::StatusOr<BootSpec> ReadBootSpecFromFd(int fd) {
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof(buf), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "read(boot spec)");
    if (n == 0) break;
    data.append(buf, n);
    if (data.size() > kMaxSize) return Bad("too large");
  }
  return ParseBootSpec(data);
}

}  // namespace sandbox::boot
