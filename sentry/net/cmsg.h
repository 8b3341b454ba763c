// The control-message (cmsg) codec of sendmsg/recvmsg: Linux's __scm_send
// (parsing a sender's msg_control) and scm_recv/put_cmsg/scm_detach_fds
// (writing what a receiver gets), as functions of bytes and callbacks so
// they can be unit-tested and fuzzed without a task.
//
// The buffer layout is x86-64's: struct cmsghdr {size_t cmsg_len; int
// cmsg_level; int cmsg_type;} (16 bytes), data aligned to 8 (CMSG_ALIGN).
//
// Guest input is hostile: every length is checked against the buffer
// (CMSG_OK), the walk follows CMSG_NXTHDR, nothing is read past the end.
#ifndef SENTRY_NET_CMSG_H_
#define SENTRY_NET_CMSG_H_

#include <stddef.h>
#include <stdint.h>

#include <functional>

#include "absl/types/span.h"
#include "sentry/base/result.h"
#include "sentry/net/message.h"
#include "sentry/vfs/fd_table.h"

namespace sandbox::net::cmsg {

inline constexpr size_t kHdrLen = 16;     // sizeof(struct cmsghdr)
inline constexpr size_t kScmMaxFd = 253;  // SCM_MAX_FD
// net.core.optmem_max (Linux 6.9+): sock_kmalloc refuses a control buffer
// that is not smaller (ENOBUFS); buffers up to 36 bytes use the stack.
inline constexpr size_t kOptmemMax = 131072;
inline constexpr size_t kStackCtlLen = kHdrLen + 20;

constexpr size_t Align(size_t n) { return (n + 7) & ~size_t{7}; }
constexpr size_t Len(size_t n) { return kHdrLen + n; }           // CMSG_LEN
constexpr size_t Space(size_t n) { return kHdrLen + Align(n); }  // CMSG_SPACE

// The sender's identity for SCM_CREDENTIALS (scm_check_creds).
struct SenderCreds {
  int32_t tgid = 0;  // in the sandbox's PID namespace
  uint32_t uid = 0, euid = 0, suid = 0;
  uint32_t gid = 0, egid = 0, sgid = 0;
  bool cap_sys_admin = false, cap_setuid = false, cap_setgid = false;
};

struct SendContext {
  int family = 0;  // SCM_RIGHTS is AF_UNIX's only
  SenderCreds creds;
  // fget_raw: the description at `fd` (any open one, O_PATH too), EBADF.
  std::function<KResult<vfs::FileRef>(int fd)> get_file;
  // find_get_pid: whether a thread group or thread `pid` exists.
  std::function<bool(int32_t pid)> pid_exists;
};

// __scm_send: the control messages of a send. `control` is the guest's
// msg_control (msg_controllen bytes, copied in by the caller after its
// ENOBUFS check). Errors as Linux: EINVAL for a bad cmsg_len, an unknown
// SOL_SOCKET type, SCM_RIGHTS outside AF_UNIX or beyond SCM_MAX_FD in all,
// a bad SCM_CREDENTIALS length or id; EBADF for a bad descriptor; EPERM for
// credentials the sender may not claim; ESRCH for a pid that does not
// exist. Messages of other levels are collected in `raw`, in order, for
// the protocol to check (AF_UNIX ignores them, as Linux does).
KResult<ControlMessages> ParseSend(absl::Span<const uint8_t> control,
                                   const SendContext& ctx);

// Where received control data goes: the guest's msg_control buffer and
// its descriptor table.
class RecvSink {
 public:
  virtual ~RecvSink() = default;
  // Writes `n` bytes at offset `at` of the control buffer; false on a
  // fault.
  virtual bool Write(size_t at, const void* src, size_t n) = 0;
  // Installs a received description (receive_fd): the new descriptor, or
  // EMFILE.
  virtual KResult<int> InstallFd(const vfs::FileRef& f, bool cloexec) = 0;
  // Undoes InstallFd (its number could not be written).
  virtual void RemoveFd(int fd) = 0;
};

struct RecvResult {
  size_t controllen = 0;  // bytes used: the new msg_controllen
  int msg_flags = 0;      // MSG_CTRUNC when something did not fit
};

// scm_recv: writes `cm` (creds first, as put_cmsg, then the descriptors as
// scm_detach_fds: as many as fit, each installed only once its slot could
// be written; MSG_CMSG_CLOEXEC when `cloexec`) into a control buffer of
// `controllen` bytes; `has_control` is msg_control != NULL. Descriptions
// that were not installed are dropped (cm.rights is cleared).
RecvResult PutReceived(ControlMessages& cm, bool has_control, size_t controllen,
                       bool cloexec, RecvSink& sink);

}  // namespace sandbox::net::cmsg

#endif  // SENTRY_NET_CMSG_H_
