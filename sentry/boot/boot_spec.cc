#include "sentry/boot/boot_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sandbox::boot {
namespace {

constexpr char kMagic[3] = {'R', 'S', 'B'};
constexpr char kVersion1 = '1';
constexpr char kVersion2 = '2';
constexpr char kVersion3 = '3';
constexpr char kVersion4 = '4';
constexpr uint32_t kNetHost = 1;
constexpr uint32_t kNetPolicy = 2;
constexpr uint32_t kGoferMountReadOnly = 1;
constexpr uint32_t kGoferMountShared = 2;
constexpr uint32_t kGoferMountSuid = 4;
constexpr uint32_t kGoferMountUds = 8;
constexpr size_t kMaxSize = 256 << 20;
constexpr uint32_t kMaxStrings = 1 << 20;
constexpr uint32_t kFlagStrace = 1;
constexpr uint32_t kFlagStraceSummary = 2;
constexpr uint32_t kFlagUnconfined = 4;
constexpr uint32_t kFlagDebugSeccomp = 8;
constexpr uint32_t kFlagLogJson = 16;
constexpr uint32_t kFlagWarnUnsupported = 32;

void PutU32(std::string* out, uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void PutU64(std::string* out, uint64_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void PutString(std::string* out, const std::string& s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

class Reader {
 public:
  explicit Reader(const std::string& d) : d_(d) {}
  bool U32(uint32_t* v) {
    if (d_.size() - pos_ < sizeof(*v)) return false;
    memcpy(v, d_.data() + pos_, sizeof(*v));
    pos_ += sizeof(*v);
    return true;
  }
  bool U64(uint64_t* v) {
    if (d_.size() - pos_ < sizeof(*v)) return false;
    memcpy(v, d_.data() + pos_, sizeof(*v));
    pos_ += sizeof(*v);
    return true;
  }
  bool String(std::string* s) {
    uint32_t n;
    if (!U32(&n) || d_.size() - pos_ < n) return false;
    s->assign(d_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Strings(std::vector<std::string>* v) {
    uint32_t n;
    if (!U32(&n) || n > kMaxStrings) return false;
    v->resize(n);
    for (auto& s : *v) {
      if (!String(&s)) return false;
    }
    return true;
  }
  bool Seed(std::vector<SeedEntry>* v) {
    uint32_t n;
    if (!U32(&n) || n > kMaxStrings) return false;
    v->clear();
    for (uint32_t i = 0; i < n; ++i) {
      SeedEntry e;
      uint32_t kind, fd;
      if (!U32(&kind) || !String(&e.path) || !U32(&e.mode) || !U32(&e.uid) ||
          !U32(&e.gid) || !U32(&fd)) {
        return false;
      }
      if (kind != SeedEntry::kDir && kind != SeedEntry::kFile &&
          kind != SeedEntry::kTmpfsMount) {
        return false;
      }
      e.kind = static_cast<SeedEntry::Kind>(kind);
      e.host_fd = static_cast<int32_t>(fd);
      v->push_back(std::move(e));
    }
    return true;
  }
  // Version 2's root and Gofer mounts.
  bool Root(BootSpec* spec) {
    uint32_t kind, fd, n;
    if (!U32(&kind) || !U32(&fd) || !U32(&n)) return false;
    if (kind != static_cast<uint32_t>(RootKind::kTmpfs) &&
        kind != static_cast<uint32_t>(RootKind::kGofer) &&
        kind != static_cast<uint32_t>(RootKind::kGoferReadOnly)) {
      return false;
    }
    spec->root = static_cast<RootKind>(kind);
    spec->root_gofer_fd = static_cast<int32_t>(fd);
    if (spec->root != RootKind::kTmpfs && spec->root_gofer_fd < 0) {
      return false;
    }
    if (n > kMaxGoferMounts) return false;
    spec->gofer_mounts.clear();
    for (uint32_t i = 0; i < n; ++i) {
      GoferMount m;
      uint32_t mfd, flags;
      if (!String(&m.path) || !U32(&mfd) || !U32(&flags)) return false;
      m.fd = static_cast<int32_t>(mfd);
      if (m.fd < 0 || m.path.empty() || m.path[0] != '/' ||
          (flags & ~(kGoferMountReadOnly | kGoferMountShared | kGoferMountSuid |
                     kGoferMountUds)) != 0) {
        return false;
      }
      m.read_only = flags & kGoferMountReadOnly;
      m.shared = flags & kGoferMountShared;
      m.suid = flags & kGoferMountSuid;
      m.host_sockets = flags & kGoferMountUds;
      spec->gofer_mounts.push_back(std::move(m));
    }
    return true;
  }
  // Version 4's network.
  bool Network(BootSpec* spec) {
    uint32_t fd, flags, n;
    if (!U32(&fd) || !U32(&flags) || !U32(&n)) return false;
    spec->broker_fd = static_cast<int32_t>(fd);
    if ((flags & ~(kNetHost | kNetPolicy)) != 0 || spec->broker_fd < -1) {
      return false;
    }
    spec->network =
        (flags & kNetHost) ? NetworkMode::kHost : NetworkMode::kNone;
    spec->egress_policy = flags & kNetPolicy;
    // Host mode and published ports need the broker.
    if ((spec->network == NetworkMode::kHost || n > 0) && spec->broker_fd < 0) {
      return false;
    }
    if (n > kMaxPublishedPorts) return false;
    spec->published.clear();
    for (uint32_t i = 0; i < n; ++i) {
      PublishedPort p;
      uint32_t proto, port;
      if (!U32(&proto) || !U32(&port) || !String(&p.host)) return false;
      if ((proto != PublishedPort::kTcp && proto != PublishedPort::kUdp) ||
          port == 0 || port > 65535 || p.host.size() > 64) {
        return false;
      }
      p.proto = static_cast<PublishedPort::Proto>(proto);
      p.guest_port = static_cast<uint16_t>(port);
      spec->published.push_back(std::move(p));
    }
    return true;
  }
  bool AtEnd() const { return pos_ == d_.size(); }

 private:
  const std::string& d_;
  size_t pos_ = 4;
};

}  // namespace

std::string SerializeBootSpec(const BootSpec& spec) {
  std::string out(kMagic, sizeof(kMagic));
  out.push_back(kVersion4);
  PutU32(&out, (spec.strace ? kFlagStrace : 0) |
                   (spec.strace_summary ? kFlagStraceSummary : 0) |
                   (spec.unconfined ? kFlagUnconfined : 0) |
                   (spec.debug_seccomp ? kFlagDebugSeccomp : 0) |
                   (spec.log_json ? kFlagLogJson : 0) |
                   (spec.warn_unsupported ? kFlagWarnUnsupported : 0));
  PutString(&out, spec.exe_path);
  PutString(&out, spec.cwd);
  PutString(&out, spec.hostname);
  PutString(&out, spec.debug_log);
  PutString(&out, spec.log);
  PutU32(&out, static_cast<uint32_t>(spec.argv.size()));
  for (const auto& s : spec.argv) PutString(&out, s);
  PutU32(&out, static_cast<uint32_t>(spec.envp.size()));
  for (const auto& s : spec.envp) PutString(&out, s);
  PutU32(&out, static_cast<uint32_t>(spec.seed.size()));
  for (const SeedEntry& e : spec.seed) {
    PutU32(&out, e.kind);
    PutString(&out, e.path);
    PutU32(&out, e.mode);
    PutU32(&out, e.uid);
    PutU32(&out, e.gid);
    PutU32(&out, static_cast<uint32_t>(e.host_fd));
  }
  PutU32(&out, static_cast<uint32_t>(spec.root));
  PutU32(&out, static_cast<uint32_t>(spec.root_gofer_fd));
  PutU32(&out, static_cast<uint32_t>(spec.gofer_mounts.size()));
  for (const GoferMount& m : spec.gofer_mounts) {
    PutString(&out, m.path);
    PutU32(&out, static_cast<uint32_t>(m.fd));
    PutU32(&out, (m.read_only ? kGoferMountReadOnly : 0) |
                     (m.shared ? kGoferMountShared : 0) |
                     (m.suid ? kGoferMountSuid : 0) |
                     (m.host_sockets ? kGoferMountUds : 0));
  }
  PutU64(&out, spec.memory_limit);
  PutU32(&out, spec.pids_limit);
  PutU32(&out, static_cast<uint32_t>(spec.broker_fd));
  PutU32(&out, (spec.network == NetworkMode::kHost ? kNetHost : 0) |
                   (spec.egress_policy ? kNetPolicy : 0));
  PutU32(&out, static_cast<uint32_t>(spec.published.size()));
  for (const PublishedPort& p : spec.published) {
    PutU32(&out, p.proto);
    PutU32(&out, p.guest_port);
    PutString(&out, p.host);
  }
  return out;
}

absl::StatusOr<BootSpec> ParseBootSpec(const std::string& data) {
  if (data.size() > kMaxSize || data.size() < sizeof(kMagic) + 1 ||
      memcmp(data.data(), kMagic, sizeof(kMagic)) != 0 ||
      (data[3] < kVersion1 || data[3] > kVersion4)) {
    return absl::InvalidArgumentError("boot spec: bad magic or size");
  }
  const bool v2 = data[3] >= kVersion2;
  const bool v3 = data[3] >= kVersion3;
  const bool v4 = data[3] >= kVersion4;
  Reader r(data);
  BootSpec spec;
  uint32_t flags;
  if (!r.U32(&flags) || !r.String(&spec.exe_path) || !r.String(&spec.cwd) ||
      !r.String(&spec.hostname) || !r.String(&spec.debug_log) ||
      !r.String(&spec.log) || !r.Strings(&spec.argv) ||
      !r.Strings(&spec.envp) || !r.Seed(&spec.seed) || (v2 && !r.Root(&spec)) ||
      (v3 && (!r.U64(&spec.memory_limit) || !r.U32(&spec.pids_limit))) ||
      (v4 && !r.Network(&spec)) || !r.AtEnd()) {
    return absl::InvalidArgumentError("boot spec: truncated or malformed");
  }
  spec.strace = flags & kFlagStrace;
  spec.strace_summary = flags & kFlagStraceSummary;
  spec.unconfined = flags & kFlagUnconfined;
  spec.debug_seccomp = flags & kFlagDebugSeccomp;
  spec.log_json = flags & kFlagLogJson;
  spec.warn_unsupported = flags & kFlagWarnUnsupported;
  return spec;
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
    if (data.size() > kMaxSize) {
      return absl::InvalidArgumentError("boot spec: too large");
    }
  }
  return ParseBootSpec(data);
}

}  // namespace sandbox::boot
