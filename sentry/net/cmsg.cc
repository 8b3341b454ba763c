#include "sentry/net/cmsg.h"

#include <string.h>
#include <sys/socket.h>

#include <algorithm>

namespace sandbox::net::cmsg {
namespace {

struct Hdr {
  uint64_t len;
  int32_t level;
  int32_t type;
};
static_assert(sizeof(Hdr) == kHdrLen);

constexpr uint32_t kInvalidId = 0xffffffffu;  // INVALID_UID / INVALID_GID

// scm_check_creds.
KResult<void> CheckCreds(const Ucred& u, const SenderCreds& s) {
  if (u.uid == kInvalidId || u.gid == kInvalidId) return kEINVAL;
  const bool pid_ok = u.pid == s.tgid || s.cap_sys_admin;
  const bool uid_ok =
      u.uid == s.uid || u.uid == s.euid || u.uid == s.suid || s.cap_setuid;
  const bool gid_ok =
      u.gid == s.gid || u.gid == s.egid || u.gid == s.sgid || s.cap_setgid;
  if (pid_ok && uid_ok && gid_ok) return OkResult();
  return kEPERM;
}

}  // namespace

KResult<ControlMessages> ParseSend(absl::Span<const uint8_t> control,
                                   const SendContext& ctx) {
  ControlMessages out;
  const size_t size = control.size();
  // for_each_cmsghdr: CMSG_FIRSTHDR, then CMSG_NXTHDR while a whole
  // header fits.
  for (size_t off = 0; size >= kHdrLen && off <= size - kHdrLen;) {
    Hdr h;
    memcpy(&h, control.data() + off, sizeof(h));
    // CMSG_OK.
    if (h.len < kHdrLen || h.len > size - off) return kEINVAL;
    if (h.level == SOL_SOCKET) {
      const uint8_t* data = control.data() + off + kHdrLen;
      switch (h.type) {
        case SCM_RIGHTS: {  // scm_fp_copy
          if (ctx.family != AF_UNIX) return kEINVAL;
          const size_t num = (h.len - kHdrLen) / sizeof(int32_t);
          if (num == 0) break;
          if (num > kScmMaxFd) return kEINVAL;
          if (out.rights.size() + num > kScmMaxFd) return kEINVAL;
          for (size_t i = 0; i < num; ++i) {
            int32_t fd;
            memcpy(&fd, data + i * sizeof(fd), sizeof(fd));
            if (fd < 0 || !ctx.get_file) return kEBADF;
            TRY(vfs::FileRef f, ctx.get_file(fd));
            if (f == nullptr) return kEBADF;
            out.rights.push_back(std::move(f));
          }
          break;
        }
        case SCM_CREDENTIALS: {
          if (h.len != Len(sizeof(Ucred))) return kEINVAL;
          Ucred u;
          memcpy(&u, data, sizeof(u));
          TRY_VOID(CheckCreds(u, ctx.creds));
          if (!ctx.pid_exists || !ctx.pid_exists(u.pid)) return kESRCH;
          out.creds = u;
          break;
        }
        default:
          return kEINVAL;
      }
    } else {
      // The protocol's (ip_cmsg_send, ip6_datagram_send_ctl).
      const uint8_t* data = control.data() + off + kHdrLen;
      ControlMessages::Raw r;
      r.level = h.level;
      r.type = h.type;
      r.data.assign(data, data + (h.len - kHdrLen));
      out.raw.push_back(std::move(r));
    }
    // CMSG_NXTHDR (h.len <= size - off, so this cannot overflow).
    off += Align(h.len);
  }
  return out;
}

RecvResult PutReceived(ControlMessages& cm, bool has_control, size_t controllen,
                       bool cloexec, RecvSink& sink) {
  RecvResult r;
  if (!has_control) {
    if (!cm.empty()) r.msg_flags |= MSG_CTRUNC;
    cm.rights.clear();
    return r;
  }
  size_t at = 0;                                  // msg_control - cmsg_ptr
  size_t room = controllen;                       // msg_controllen
  for (const ControlMessages::Raw& m : cm.raw) {  // put_cmsg
    if (room < kHdrLen) {
      r.msg_flags |= MSG_CTRUNC;
      break;
    }
    size_t cmlen = Len(m.data.size());
    if (room < cmlen) {
      r.msg_flags |= MSG_CTRUNC;
      cmlen = room;
    }
    Hdr h{cmlen, m.level, m.type};
    if (!sink.Write(at, &h, sizeof(h)) ||
        !sink.Write(at + kHdrLen, m.data.data(), cmlen - kHdrLen)) {
      break;
    }
    size_t adv = std::min(Space(m.data.size()), room);
    at += adv;
    room -= adv;
  }
  if (cm.creds.has_value()) {  // put_cmsg(SOL_SOCKET, SCM_CREDENTIALS)
    const Ucred u = *cm.creds;
    if (room < kHdrLen) {
      r.msg_flags |= MSG_CTRUNC;
    } else {
      size_t cmlen = Len(sizeof(u));
      if (room < cmlen) {
        r.msg_flags |= MSG_CTRUNC;
        cmlen = room;
      }
      Hdr h{cmlen, SOL_SOCKET, SCM_CREDENTIALS};
      if (sink.Write(at, &h, sizeof(h)) &&
          sink.Write(at + kHdrLen, &u, cmlen - kHdrLen)) {
        size_t adv = std::min(Space(sizeof(u)), room);
        at += adv;
        room -= adv;
      }
    }
  }
  if (!cm.rights.empty()) {  // scm_detach_fds
    const size_t count = cm.rights.size();
    const size_t fdmax =
        room <= kHdrLen ? 0
                        : std::min(count, (room - kHdrLen) / sizeof(int32_t));
    size_t i = 0;
    for (; i < fdmax; ++i) {
      const size_t slot = at + kHdrLen + i * sizeof(int32_t);
      int32_t probe = -1;
      if (!sink.Write(slot, &probe, sizeof(probe))) break;
      KResult<int> fd = sink.InstallFd(cm.rights[i], cloexec);
      if (!fd.ok()) break;
      int32_t v = fd.value();
      if (!sink.Write(slot, &v, sizeof(v))) {
        sink.RemoveFd(v);
        break;
      }
    }
    if (i > 0) {
      Hdr h{Len(i * sizeof(int32_t)), SOL_SOCKET, SCM_RIGHTS};
      if (sink.Write(at, &h, sizeof(h))) {
        size_t adv = std::min(Space(i * sizeof(int32_t)), room);
        at += adv;
        room -= adv;
      }
    }
    if (i < count) r.msg_flags |= MSG_CTRUNC;
    cm.rights.clear();
  }
  r.controllen = at;
  return r;
}

}  // namespace sandbox::net::cmsg
