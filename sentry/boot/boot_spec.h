// BootSpec: what `runsc do` hands the Sentry (`runsc boot`): the program,
// its arguments and environment, and the Sentry's options. Passed through a
// memfd so the guest's environment never becomes the Sentry's own.
//
// Wire format (this binary only: `runsc do` and `runsc boot` are one
// executable): the protobuf message wire::BootSpec (boot_spec.proto) in a
// frame: "RSB5", the message's length (u32, little-endian), the message.
// The parser treats the spec as untrusted input: a frame whose length
// does not match (truncated, trailing bytes), a malformed message or a
// field out of range (an unknown enum value, a missing FD, a relative
// mount path, too many entries) is an InvalidArgument naming the problem.
// Users see only the struct below: protobuf stays inside boot_spec.cc.
#ifndef SENTRY_BOOT_BOOT_SPEC_H_
#define SENTRY_BOOT_BOOT_SPEC_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sandbox::boot {

// One thing the Sentry creates in its root file system before the program
// starts. Until the Gofer serves the root (issue #6), `runsc do` describes
// the whole root this way; the Sentry applies the entries in order through
// the VFS, creating missing parent directories (root-owned, 0755).
struct SeedEntry {
  enum Kind : uint32_t {
    kDir = 1,         // a directory (existing: mode/owner updated)
    kFile = 2,        // a regular file, its content read from host_fd
    kTmpfsMount = 3,  // a new tmpfs instance mounted at path
  };
  Kind kind = kDir;
  std::string path;      // absolute
  uint32_t mode = 0755;  // permission bits (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  // kFile: the FD (in `runsc boot`) to read the content from, at most
  // kMaxSeedFileSize bytes; a regular file.
  int32_t host_fd = -1;
};

inline constexpr uint64_t kMaxSeedFileSize = uint64_t{1} << 30;

// What the sandbox's root file system is.
enum class RootKind : uint32_t {
  kTmpfs = 0,  // A tmpfs built from `seed` alone (runsc do --root=tmpfs).
  kGofer = 1,  // The Gofer's connection on root_gofer_fd (the host root).
  // The same without the overlay (writes fail with EROFS): runsc do
  // --root=host-ro.
  kGoferReadOnly = 2,
};

// A Gofer connection mounted over the root (runsc do --bind).
struct GoferMount {
  std::string path;  // Absolute path in the sandbox; made if missing.
  int32_t fd = -1;   // The Sentry's end of the connection in `runsc boot`.
  bool read_only = false;
  // Shared with the host: no caching without revalidation.
  bool shared = true;
  // Mounted without MS_NOSUID (runsc do --bind=...:suid); else nosuid.
  bool suid = false;
  // The guest may bind and connect host Unix sockets here (runsc do
  // --bind=...:uds; the Gofer serves BindSocket/ConnectSocket on this
  // connection only).
  bool host_sockets = false;
};

// At most this many Gofer mounts.
inline constexpr uint32_t kMaxGoferMounts = 256;

// One runsc do --publish: the broker listens on `host` and hands each
// connection (TCP) or peer's flow (UDP) to the Sentry for `guest_port`.
struct PublishedPort {
  enum Proto : uint32_t { kTcp = 1, kUdp = 2 };
  Proto proto = kTcp;
  uint16_t guest_port = 0;
  std::string host;  // "127.0.0.1:8080" (for logs)
};

// At most this many --publish flags.
inline constexpr uint32_t kMaxPublishedPorts = 256;

// The network mode (runsc do --network).
enum class NetworkMode : uint32_t {
  kNone = 0,  // loopback only; no broker unless a port is published
  kHost = 1,  // non-loopback destinations through the broker
};

struct BootSpec {
  std::string exe_path;  // absolute path of the program (AT_EXECFN, exe)
  std::string cwd;
  std::string hostname;
  std::string debug_log;  // file for strace/debug lines; empty: stderr
  // --log: the file for the sandbox's warnings and errors (empty: none),
  // as JSON lines with log_json; warn_unsupported: unsupported-syscall
  // notes on stderr too (sentry/kernel/log.h).
  std::string log;
  bool log_json = false;
  bool warn_unsupported = false;
  bool strace = false;
  bool strace_summary = false;
  // Debugging only: the Sentry does not confine itself (sentry/confine).
  bool unconfined = false;
  // A host syscall outside the Sentry's allowlist is reported and fails
  // with ENOSYS instead of killing the Sentry.
  bool debug_seccomp = false;
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  // The root file system's content, created in order (over the Gofer
  // root too: tmpfs mounts at /tmp and /dev/shm).
  std::vector<SeedEntry> seed;
  RootKind root = RootKind::kTmpfs;
  int32_t root_gofer_fd = -1;  // kGofer: the root's connection (read-only)
  std::vector<GoferMount> gofer_mounts;  // mounted after the seed, in order
  // Resource limits (runsc do --memory, --pids-limit; 0: none): the guest's
  // memory in bytes (the memory file's limit, /proc/meminfo's MemTotal,
  // the default tmpfs size) and its tasks.
  uint64_t memory_limit = 0;
  uint32_t pids_limit = 0;
  // The network (runsc do --network, --publish, --egress-*): the Sentry's
  // end of its connection to the broker (broker/protocol; -1: no broker,
  // nothing reaches the host), the mode, whether an egress policy is
  // enforced (the broker decides; the Sentry only says so in
  // /etc/resolv.conf), and the published ports.
  int32_t broker_fd = -1;
  NetworkMode network = NetworkMode::kNone;
  bool egress_policy = false;
  std::vector<PublishedPort> published;
};

std::string SerializeBootSpec(const BootSpec& spec);
// Rejects truncated, malformed or oversized input (at most 64 MiB, 1M
// strings a list) and fields out of range.
absl::StatusOr<BootSpec> ParseBootSpec(const std::string& data);

// Writes the spec to a new sealed memfd; returns the FD (close-on-exec).
absl::StatusOr<int> WriteBootSpecToMemfd(const BootSpec& spec);
absl::StatusOr<BootSpec> ReadBootSpecFromFd(int fd);

}  // namespace sandbox::boot

#endif  // SENTRY_BOOT_BOOT_SPEC_H_
