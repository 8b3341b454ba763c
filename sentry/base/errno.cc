#include "sentry/base/errno.h"

#include <string.h>

namespace sandbox {

const char* ErrnoName(int number) {
  switch (number) {
#define E(n) \
  case n:    \
    return #n;
    E(EPERM)
    E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(ENOEXEC) E(EBADF) E(
        ECHILD) E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT) E(ENOTBLK) E(EBUSY)
        E(EEXIST) E(EXDEV) E(ENODEV) E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE) E(
            EMFILE) E(ENOTTY) E(ETXTBSY) E(EFBIG) E(ENOSPC) E(ESPIPE) E(EROFS)
            E(EMLINK) E(EPIPE) E(EDOM) E(ERANGE) E(EDEADLK) E(ENAMETOOLONG) E(
                ENOLCK) E(ENOSYS) E(ENOTEMPTY) E(ELOOP) E(ENOMSG) E(EIDRM)
                E(ENOSTR) E(ENODATA) E(ETIME) E(ENOSR) E(EREMOTE) E(ENOLINK) E(
                    EPROTO) E(EBADMSG) E(EOVERFLOW) E(EILSEQ) E(EUSERS) E(ENOTSOCK)
                    E(EDESTADDRREQ) E(EMSGSIZE) E(EPROTOTYPE) E(ENOPROTOOPT) E(
                        EPROTONOSUPPORT) E(ESOCKTNOSUPPORT) E(EOPNOTSUPP)
                        E(EPFNOSUPPORT) E(EAFNOSUPPORT) E(EADDRINUSE) E(
                            EADDRNOTAVAIL) E(ENETDOWN) E(ENETUNREACH) E(ENETRESET)
                            E(ECONNABORTED) E(ECONNRESET) E(ENOBUFS) E(EISCONN) E(
                                ENOTCONN) E(ESHUTDOWN) E(ETOOMANYREFS) E(ETIMEDOUT)
                                E(ECONNREFUSED) E(EHOSTDOWN) E(EHOSTUNREACH) E(
                                    EALREADY) E(EINPROGRESS) E(ESTALE) E(EDQUOT)
                                    E(ECANCELED) E(EOWNERDEAD) E(
                                        ENOTRECOVERABLE) E(ERFKILL) E(EHWPOISON)
                                        E(ECHRNG) E(EL2NSYNC) E(EL3HLT) E(
                                            EL3RST) E(ELNRNG) E(EUNATCH) E(ENOCSI)
                                            E(EL2HLT) E(EBADE) E(EBADR) E(
                                                EXFULL) E(ENOANO) E(EBADRQC)
                                                E(EBADSLT) E(EBFONT) E(ENONET) E(
                                                    ENOPKG) E(EADV) E(ESRMNT)
                                                    E(ECOMM) E(EMULTIHOP) E(
                                                        EDOTDOT) E(ENOTUNIQ) E(EBADFD)
                                                        E(EREMCHG) E(ELIBACC) E(
                                                            ELIBBAD) E(ELIBSCN)
                                                            E(ELIBMAX) E(ELIBEXEC) E(
                                                                ERESTART) E(ESTRPIPE)
                                                                E(EUCLEAN) E(ENOTNAM) E(
                                                                    ENAVAIL) E(EISNAM)
                                                                    E(EREMOTEIO) E(
                                                                        ENOMEDIUM) E(EMEDIUMTYPE)
                                                                        E(ENOKEY) E(
                                                                            EKEYEXPIRED)
                                                                            E(EKEYREVOKED)
                                                                                E(EKEYREJECTED)
#undef E
                                                                                    case kERESTARTSYS
        : return "ERESTARTSYS";
    case kERESTARTNOINTR:
      return "ERESTARTNOINTR";
    case kERESTARTNOHAND:
      return "ERESTARTNOHAND";
    case kENOIOCTLCMD:
      return "ENOIOCTLCMD";
    case kERESTART_RESTARTBLOCK:
      return "ERESTART_RESTARTBLOCK";
    default:
      return nullptr;
  }
}

std::string_view Errno::name() const {
  const char* n = ErrnoName(number_);
  return n != nullptr ? n : "E?";
}

std::string_view Errno::message() const {
  if (number_ >= 512) return "kernel-internal restart code";
  // strerrordesc_np is async-signal-safe and thread-safe (glibc >= 2.32).
  const char* m = strerrordesc_np(number_);
  return m != nullptr ? m : "Unknown error";
}

}  // namespace sandbox
