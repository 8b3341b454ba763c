#include "gofer/gofer.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gofer/seccomp.h"
#include "gofer/server/node.h"
#include "gofer/server/server.h"

namespace gofer {

absl::Status RunGofer(const GoferConfig& config) {
  std::vector<UniqueFd> socks;
  for (const ServedMount& m : config.mounts) socks.emplace_back(m.sock_fd);
  if (config.mounts.empty()) {
    return absl::InvalidArgumentError("no connection to serve");
  }
  for (const ServedMount& m : config.mounts) {
    int domain = 0, type = 0;
    socklen_t len = sizeof(int);
    if (getsockopt(m.sock_fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
        getsockopt(m.sock_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        domain != AF_UNIX || type != SOCK_STREAM) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FD ", m.sock_fd, " is not a connected AF_UNIX SOCK_STREAM socket"));
    }
  }
  for (const ServedMount& m : config.mounts) {
    if (m.volume >= 0 &&
        (static_cast<size_t>(m.volume) >= config.volumes.size() ||
         !m.path.empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat("connection on FD ", m.sock_fd, ": bad volume"));
    }
  }
  // CAP_CHOWN only serves a writable ":suid" connection.
  bool keep_chown = false;
  for (const ServedMount& m : config.mounts) {
    keep_chown |= m.suid && !m.read_only;
  }
  UniqueFd base;
  std::vector<UniqueFd> volumes;
  std::shared_ptr<const Hidden> hidden;
  if (config.confine) {
    absl::Status s =
        Confine({config.root, config.root_read_only, config.submounts,
                 config.user_namespace, config.volumes, keep_chown},
                &volumes, &hidden);
    if (!s.ok()) return s;
    base.reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  } else {
    for (const Volume& v : config.volumes) {
      volumes.emplace_back(
          open(v.source.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!volumes.back().valid()) {
        return absl::ErrnoToStatus(errno, absl::StrCat("open ", v.source));
      }
    }
    base.reset(open(config.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (base.valid()) {
      absl::Status s = DropCapabilities(keep_chown);
      if (!s.ok()) return s;
    }
  }
  if (!base.valid()) {
    return absl::ErrnoToStatus(errno, absl::StrCat("open root ", config.root));
  }
  std::vector<UniqueFd> roots;
  for (const ServedMount& m : config.mounts) {
    UniqueFd dir;
    int err = m.volume >= 0 ? OpenPathBeneath(volumes[m.volume].get(), "", &dir)
                            : OpenPathBeneath(base.get(), m.path, &dir);
    struct stat st;
    if (err == 0 && fstat(dir.get(), &st) != 0) err = errno;
    if (err == 0 && !S_ISDIR(st.st_mode)) err = ENOTDIR;
    if (err != 0) {
      return absl::ErrnoToStatus(err,
                                 absl::StrCat("open served path ", m.path));
    }
    roots.push_back(std::move(dir));
  }
  base.reset();
  volumes.clear();
  // Each handle holds one or two host FDs: allow as many as the hard limit.
  struct rlimit nofile;
  size_t max_fds = 1024;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    if (nofile.rlim_cur < nofile.rlim_max) {
      nofile.rlim_cur = nofile.rlim_max;
      setrlimit(RLIMIT_NOFILE, &nofile);
    }
    getrlimit(RLIMIT_NOFILE, &nofile);
    max_fds = nofile.rlim_cur == RLIM_INFINITY
                  ? size_t{1} << 20
                  : static_cast<size_t>(nofile.rlim_cur);
  }
  // The owners of new files on nosuid connections: the Gofer's ids now
  // (in its user namespace, if any), read before the seccomp filter.
  const uint32_t owner_uid = geteuid(), owner_gid = getegid();
  // The handles of all connections together fit in the FDs (two each at
  // most, past a reserve for the sockets, the roots and an FD being
  // donated): a guest that walks or opens past it gets EMFILE for that call,
  // never a Gofer that cannot open what the Sentry asks next.
  const size_t max_handles =
      std::clamp<size_t>((max_fds > 128 ? max_fds - 64 : max_fds / 2) / 2 /
                             std::max<size_t>(1, config.mounts.size()),
                         16, ServerOptions{}.max_handles);
  umask(0);  // Modes are exactly what the client asked (the server fixes
             // them anyway; this saves a chmod per creation).
  if (config.seccomp) {
    // glibc's malloc, shrinking a thread arena's heap, reads
    // /proc/sys/vm/overcommit_memory (an openat without O_NOFOLLOW, which
    // the allowlist kills): one arena (the main one, trimmed with brk) and
    // no trimming, so a large reply freed by a connection thread (a
    // GetdentsPlus batch) never opens a file.
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    bool host_sockets = false;
    for (const ServedMount& m : config.mounts) host_sockets |= m.host_sockets;
    absl::Status s = InstallSeccomp(host_sockets);
    if (!s.ok()) return s;
  }
  std::vector<int> results(config.mounts.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < config.mounts.size(); ++i) {
    ServerOptions opts;
    opts.read_only = config.mounts[i].read_only;
    opts.suid = config.mounts[i].suid;
    opts.host_sockets = config.mounts[i].host_sockets;
    opts.owner_uid = owner_uid;
    opts.owner_gid = owner_gid;
    opts.hidden = hidden;
    opts.max_handles = max_handles;
    threads.emplace_back([&results, i, opts, sock = socks[i].release(),
                          root = roots[i].release()] {
      results[i] = ServeConnection(UniqueFd(sock), UniqueFd(root), opts);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i] != 0) {
      return absl::ErrnoToStatus(results[i],
                                 absl::StrCat("connection ", i, " ended"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gofer
