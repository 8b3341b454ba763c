// A hostile guest for AF_UNIX (test/e2e/sock_hostile_test): at scale, it
// sends descriptors around cycles of sockets and closes them all, floods
// datagram sockets (non-blocking until EAGAIN; blocked senders killed),
// connects 10,000 times to a listener with backlog 1 (non-blocking, then
// blocking ones from threads, interrupted or refused), and passes garbage
// msghdr, iovec, cmsg and address lengths. Each part checks Linux's
// answers; at the end /proc/net/unix must list no more sockets than at the
// start and /proc/self/fd hold what it held.
//
//   sock_hostile all [SCALE]   every part, then the leak check; prints
//                              "sock_hostile ok" and exits 0, or prints
//                              "FAIL: ..." lines and exits 1
//   sock_hostile cycles|flood|storm|garbage|race [SCALE]
//                              (race: threads passing, receiving, dup'ing
//                              and closing a shared pool of sockets)
//   sock_hostile gcstorm [DEPTH [CLOSES]]
//                              times unrelated closes while DEPTH pairs are
//                              in flight (a reproducer; no check)
//   sock_hostile abandon       leaves cycles in flight, sockets open and
//                              threads blocked in send and connect, and
//                              exits (the kernel must clean up)
// SCALE (default 1) multiplies the rounds. --no-proc skips the
// /proc/net/unix count (natively other processes' sockets change it).
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;
static int scale = 1;

#define FAIL(...)                 \
  do {                            \
    printf("FAIL: " __VA_ARGS__); \
    printf("\n");                 \
    fflush(stdout);               \
    ++failures;                   \
  } while (0)

static long NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int FdCount(void) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;
}

static int UnixLines(void) {
  FILE* f = fopen("/proc/net/unix", "r");
  if (f == NULL) return -1;
  int n = 0;
  char line[512];
  while (fgets(line, sizeof(line), f) != NULL) ++n;
  fclose(f);
  return n - 1;  // the header
}

// Linux runs the unix collector when a unix socket is released.
static void TriggerCollection(void) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) close(fd);
}

// The pipe's read end sees its last writer go within 10 s.
static int HupWithin(int rfd) {
  struct pollfd p = {rfd, POLLIN, 0};
  for (long end = NowMs() + 10000; NowMs() < end;) {
    TriggerCollection();
    p.revents = 0;
    if (poll(&p, 1, 20) == 1) {
      if (p.revents & POLLHUP) return 1;
      char buf[256];
      if (read(rfd, buf, sizeof(buf)) == 0) return 1;
    }
  }
  return 0;
}

static ssize_t SendFds(int sock, const int* fds, int n, int flags) {
  char control[CMSG_SPACE(sizeof(int) * 16)];
  memset(control, 0, sizeof(control));
  struct iovec iov = {"x", 1};
  struct msghdr m;
  memset(&m, 0, sizeof(m));
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (n > 0) {
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    struct cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  }
  return sendmsg(sock, &m, flags);
}

static void Pair(int type, int sv[2]) {
  if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0) {
    FAIL("socketpair: %s", strerror(errno));
    sv[0] = sv[1] = -1;
  }
}

// A name of this run's own: a pid is not unique across PID namespaces that
// share a network namespace, so a random token is added.
static unsigned long long Token(void) {
  static unsigned long long token;
  if (token == 0) {
    FILE* f = fopen("/dev/urandom", "r");
    if (f == NULL || fread(&token, sizeof(token), 1, f) != 1) {
      token = (unsigned long long)NowMs() * 2654435761u + (unsigned)getpid();
    }
    if (f != NULL) fclose(f);
  }
  return token;
}

static socklen_t Abstract(struct sockaddr_un* a, const char* tag, int n) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  int len =
      snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
               "sock_hostile.%s.%d.%d.%llx", tag, (int)getpid(), n, Token());
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

// ---- Cycles. ----

static const int kTypes[3] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};

static void OneRoundOfCycles(int round, int w) {
  int sv[2], sv2[2];
  int type = kTypes[round % 3];
  // A socket in its own queue.
  Pair(type, sv);
  int fds[4] = {sv[1], w};
  if (SendFds(sv[0], fds, 2, 0) != 1) FAIL("self: %s", strerror(errno));
  close(sv[0]);
  close(sv[1]);
  // A two-cycle.
  Pair(type, sv);
  fds[0] = sv[0];
  fds[1] = w;
  if (SendFds(sv[0], fds, 2, 0) != 1) FAIL("2-cycle a: %s", strerror(errno));
  fds[0] = sv[1];
  if (SendFds(sv[1], fds, 1, 0) != 1) FAIL("2-cycle b: %s", strerror(errno));
  close(sv[0]);
  close(sv[1]);
  // A ring of 16 pairs.
  int ring[16][2];
  for (int i = 0; i < 16; ++i) Pair(type, ring[i]);
  for (int i = 0; i < 16; ++i) {
    int next[3] = {ring[(i + 1) % 16][0], ring[(i + 1) % 16][1], w};
    if (SendFds(ring[i][0], next, i == 7 ? 3 : 2, 0) != 1) {
      FAIL("ring %d: %s", i, strerror(errno));
    }
  }
  for (int i = 0; i < 16; ++i) {
    close(ring[i][0]);
    close(ring[i][1]);
  }
  // A chain 100 deep hanging from one pair, then released.
  int head[2];
  Pair(SOCK_DGRAM, head);
  int prev = head[0];
  int held[2] = {-1, -1};
  for (int i = 0; i < 100; ++i) {
    Pair(SOCK_DGRAM, sv2);
    int next[3] = {sv2[0], sv2[1], w};
    if (SendFds(prev, next, i == 99 ? 3 : 2, 0) != 1) {
      FAIL("chain %d: %s", i, strerror(errno));
    }
    if (held[0] >= 0) {
      close(held[0]);
      close(held[1]);
    }
    held[0] = sv2[0];
    held[1] = sv2[1];
    prev = sv2[0];
  }
  close(held[0]);
  close(held[1]);
  close(head[0]);
  close(head[1]);
  // A listener held by its own embryo.
  struct sockaddr_un a;
  socklen_t alen = Abstract(&a, "embryo", round);
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (bind(l, (struct sockaddr*)&a, alen) != 0 || listen(l, 4) != 0) {
    FAIL("listener: %s", strerror(errno));
  }
  int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(c, (struct sockaddr*)&a, alen) != 0) {
    FAIL("connect embryo: %s", strerror(errno));
  }
  int lw[3] = {l, w, c};
  if (SendFds(c, lw, 3, 0) != 1) FAIL("embryo: %s", strerror(errno));
  close(l);
  close(c);
  // Epoll descriptors of the sockets, in their cycle.
  Pair(type, sv);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {EPOLLIN | EPOLLOUT | EPOLLET, {0}};
  epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev);
  epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
  int e3[3] = {ep, sv[0], w};
  if (SendFds(sv[0], e3, 3, 0) != 1) FAIL("epoll a: %s", strerror(errno));
  e3[1] = sv[1];
  if (SendFds(sv[1], e3, 2, 0) != 1) FAIL("epoll b: %s", strerror(errno));
  close(ep);
  close(sv[0]);
  close(sv[1]);
}

static void Cycles(void) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    FAIL("pipe");
    return;
  }
  const int rounds = 100 * scale;
  for (int r = 0; r < rounds; ++r) OneRoundOfCycles(r, p[1]);
  close(p[1]);
  if (!HupWithin(p[0])) FAIL("cycles: descriptors in flight not released");
  close(p[0]);
  printf("cycles: %d rounds\n", rounds);
}

// ---- Floods. ----

static void Flood(void) {
  int sv[2];
  Pair(SOCK_DGRAM, sv);
  int sent = 0;
  while (sent < 100000 && send(sv[0], "f", 1, MSG_DONTWAIT) == 1) ++sent;
  if (sent == 100000 || errno != EAGAIN) {
    FAIL("flood pair: %d sent, %s", sent, strerror(errno));
  }
  close(sv[0]);
  close(sv[1]);
  // Many senders to one bound receiver, with descriptors in the flood.
  int p[2];
  pipe2(p, O_CLOEXEC);
  struct sockaddr_un a;
  socklen_t alen = Abstract(&a, "flood", 0);
  int rx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (bind(rx, (struct sockaddr*)&a, alen) != 0) FAIL("bind flood");
  const int senders = 100 * scale;
  long total = 0;
  for (int s = 0; s < senders; ++s) {
    int tx = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (connect(tx, (struct sockaddr*)&a, alen) != 0) FAIL("connect flood");
    for (int i = 0; i < 1000; ++i) {
      int fds[2] = {p[1], tx};
      if (SendFds(tx, fds, i % 2 ? 2 : 0, 0) != 1) {
        if (errno != EAGAIN) FAIL("flood send: %s", strerror(errno));
        break;
      }
      ++total;
    }
    close(tx);
  }
  // Blocked senders, killed.
  pid_t kids[8];
  for (int k = 0; k < 8; ++k) {
    kids[k] = fork();
    if (kids[k] == 0) {
      int tx = socket(AF_UNIX, SOCK_DGRAM, 0);
      int fds[1] = {p[1]};
      connect(tx, (struct sockaddr*)&a, alen);
      for (;;) SendFds(tx, fds, 1, 0);  // blocks on the full receiver
    }
  }
  close(p[1]);
  usleep(200000);
  for (int k = 0; k < 8; ++k) kill(kids[k], SIGKILL);
  for (int k = 0; k < 8; ++k) {
    int status = 0;
    if (waitpid(kids[k], &status, 0) != kids[k] || !WIFSIGNALED(status) ||
        WTERMSIG(status) != SIGKILL) {
      FAIL("blocked sender %d: status %#x", k, status);
    }
  }
  close(rx);  // drops the flood and what it carries, unread
  if (!HupWithin(p[0])) FAIL("flood: descriptors in flight not released");
  close(p[0]);
  printf("flood: %ld datagrams queued\n", total);
}

// ---- Connect storms. ----

static int AcceptAll(int l) {
  int n = 0, fd;
  while ((fd = accept4(l, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
    close(fd);
    ++n;
  }
  return n;
}

struct Connector {
  struct sockaddr_un* a;
  socklen_t alen;
  int err;
  volatile int done;
};

static void* BlockingConnect(void* arg) {
  struct Connector* c = arg;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  c->err = connect(s, (struct sockaddr*)c->a, c->alen) == 0 ? 0 : errno;
  close(s);
  __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static void Noop(int sig) { (void)sig; }

static void Storm(void) {
  struct sockaddr_un a;
  socklen_t alen = Abstract(&a, "storm", 0);
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (bind(l, (struct sockaddr*)&a, alen) != 0 || listen(l, 1) != 0) {
    FAIL("storm listener: %s", strerror(errno));
    return;
  }
  const int n = 10000 * scale;
  int connected = 0, eagain = 0, accepted = 0, pending = 0, max_pending = 0;
  for (int i = 0; i < n; ++i) {
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (connect(c, (struct sockaddr*)&a, alen) == 0) {
      ++connected;
      if (++pending > max_pending) max_pending = pending;
      if (i % 5 == 0) send(c, "hi", 2, MSG_DONTWAIT);
    } else if (errno == EAGAIN) {
      ++eagain;
      if (i % 3 == 0) {
        int k = AcceptAll(l);
        accepted += k;
        pending -= k;
      }
    } else {
      FAIL("storm connect %d: %s", i, strerror(errno));
      close(c);
      break;
    }
    close(c);
  }
  accepted += AcceptAll(l);
  if (accepted != connected || max_pending != 2 || eagain == 0) {
    FAIL("storm: connected %d accepted %d max pending %d eagain %d", connected,
         accepted, max_pending, eagain);
  }
  // Fill the backlog again; blocking connects from threads, interrupted.
  int fill[2];
  for (int i = 0; i < 2; ++i) {
    fill[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (connect(fill[i], (struct sockaddr*)&a, alen) != 0) FAIL("refill");
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = Noop;  // no SA_RESTART
  sigaction(SIGUSR1, &sa, NULL);
  enum { kThreads = 16 };
  struct Connector cs[kThreads];
  pthread_t th[kThreads];
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kThreads; ++i) {
      cs[i] = (struct Connector){&a, alen, -1, 0};
      pthread_create(&th[i], NULL, BlockingConnect, &cs[i]);
    }
    usleep(100000);
    if (round == 0) {
      // Signals until every one is back (bounded).
      for (long end = NowMs() + 10000; NowMs() < end;) {
        int left = 0;
        for (int i = 0; i < kThreads; ++i) {
          if (!__atomic_load_n(&cs[i].done, __ATOMIC_SEQ_CST)) {
            ++left;
            pthread_kill(th[i], SIGUSR1);
          }
        }
        if (left == 0) break;
        usleep(20000);
      }
    } else {
      close(l);  // refuses them all
      l = -1;
    }
    for (int i = 0; i < kThreads; ++i) {
      if (!__atomic_load_n(&cs[i].done, __ATOMIC_SEQ_CST) && round == 0) {
        FAIL("connect thread %d never came back", i);
      }
    }
    for (int i = 0; i < kThreads; ++i) {
      pthread_join(th[i], NULL);
      int want = round == 0 ? EINTR : ECONNREFUSED;
      if (cs[i].err != want) {
        FAIL("blocking connect %d round %d: %s", i, round, strerror(cs[i].err));
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    char c;
    if (recv(fill[i], &c, 1, MSG_DONTWAIT) != -1 || errno != ECONNRESET) {
      FAIL("queued connection not reset: %s", strerror(errno));
    }
    close(fill[i]);
  }
  printf("storm: %d connects, %d accepted, %d EAGAIN\n", n, accepted, eagain);
}

// ---- Garbage. ----

static uint64_t rng_state = 0x5eed2026;
static uint64_t Rand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static int Plausible(int e) {
  static const int ok[] = {EFAULT,     EINVAL,       EMSGSIZE,     ENOBUFS,
                           EBADF,      EAGAIN,       EOPNOTSUPP,   EPERM,
                           ESRCH,      EISCONN,      ENOTCONN,     EPIPE,
                           ENOENT,     ECONNREFUSED, ETOOMANYREFS, ENOMEM,
                           ECONNRESET, EDESTADDRREQ};
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); ++i) {
    if (ok[i] == e) return 1;
  }
  return 0;
}

// Closes the descriptors a receive installed (a control buffer of 256).
static void CloseReceived(struct msghdr* rm) {
  if (rm->msg_controllen > 256) return;
  for (struct cmsghdr* h = CMSG_FIRSTHDR(rm); h != NULL;
       h = CMSG_NXTHDR(rm, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
    int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < k; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
      if (fd > 2) close(fd);
    }
  }
}

static void Garbage(void) {
  char* bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  static char data[4096];
  static struct iovec iovs[1025];
  static char control[1024] __attribute__((aligned(8)));
  int p[2];
  pipe2(p, O_CLOEXEC);
  const int iters = 10000 * scale;
  int errs = 0;
  for (int t = 0; t < 3; ++t) {
    int sv[2];
    Pair(kTypes[t], sv);
    for (int it = 0; it < iters; ++it) {
      for (int k = 0; k < 1025; ++k) {
        switch (Rand() % 6) {
          case 0:
            iovs[k] = (struct iovec){NULL, Rand() % 16};
            break;
          case 1:
            iovs[k] = (struct iovec){bad, Rand() % 16};
            break;
          case 2:
            iovs[k] = (struct iovec){data, (size_t)SSIZE_MAX + Rand() % 4};
            break;
          default:
            iovs[k] = (struct iovec){data + Rand() % 2048, Rand() % 2048};
        }
        if (k > 8) {
          iovs[k] = iovs[k % 8];
        }
      }
      memset(control, 0, sizeof(control));
      for (size_t off = 0; off + 16 <= sizeof(control) && Rand() % 3;) {
        struct cmsghdr* h = (struct cmsghdr*)(control + off);
        int nfds = Rand() % 4;
        size_t lens[] = {0,
                         1,
                         15,
                         CMSG_LEN(nfds * 4),
                         CMSG_LEN(nfds * 4) + 1,
                         sizeof(control) + 1,
                         SIZE_MAX,
                         Rand()};
        h->cmsg_len = lens[Rand() % 8];
        h->cmsg_level = Rand() % 4 ? SOL_SOCKET : (int)Rand();
        h->cmsg_type = Rand() % 3 ? SCM_RIGHTS : (int)(Rand() % 64);
        for (int i = 0; i < nfds; ++i) {
          int cand[] = {p[1], p[0], sv[0], -1, 1000, (int)Rand()};
          memcpy(CMSG_DATA(h) + i * 4, &cand[Rand() % 6], 4);
        }
        off += CMSG_SPACE(nfds * 4);
      }
      struct sockaddr_un name;
      memset(&name, 0, sizeof(name));
      name.sun_family = Rand() % 4 ? AF_UNIX : (sa_family_t)Rand();
      snprintf(name.sun_path + 1, sizeof(name.sun_path) - 1, "none.%d",
               (int)getpid());
      int namelens[] = {-1, 0, 1, 2, 20, 110, 111, 128, 129, INT_MAX};
      size_t ctls[] = {
          0,       1, 15, 16, 17, 24, 27, sizeof(control), (size_t)INT_MAX + 1,
          SIZE_MAX};
      size_t iovlens[] = {0, 1, 2, 3, 8, 1024, 1025, SIZE_MAX};
      struct msghdr m;
      memset(&m, 0, sizeof(m));
      m.msg_name = Rand() % 3 == 0   ? NULL
                   : Rand() % 5 == 0 ? (void*)bad
                                     : &name;
      m.msg_namelen = namelens[Rand() % 10];
      m.msg_iov =
          Rand() % 8 == 0 ? (Rand() % 2 ? NULL : (struct iovec*)bad) : iovs;
      m.msg_iovlen = iovlens[Rand() % 8];
      m.msg_control = Rand() % 8 == 0 ? (void*)bad : control;
      m.msg_controllen = ctls[Rand() % 10];
      m.msg_flags = (int)Rand();
      int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
      ssize_t r = sendmsg(sv[0], &m, flags);
      if (r < 0) {
        ++errs;
        if (!Plausible(errno)) FAIL("sendmsg %d: errno %d", it, errno);
      }
      // sendmmsg and recvmmsg with huge counts over the same garbage.
      if (Rand() % 16 == 0) {
        struct mmsghdr mm[2];
        memset(mm, 0, sizeof(mm));
        mm[0].msg_hdr = m;
        int rr = sendmmsg(sv[0], Rand() % 2 ? mm : (struct mmsghdr*)bad,
                          Rand() % 2 ? UINT_MAX : 2, MSG_DONTWAIT);
        if (rr < 0 && !Plausible(errno)) FAIL("sendmmsg: errno %d", errno);
      }
      // Receive with garbage of its own.
      if (Rand() % 2) {
        char rbuf[64];
        char rctl[256] __attribute__((aligned(8)));
        struct iovec riov[2] = {{rbuf, Rand() % 64},
                                {Rand() % 4 ? rbuf : bad, 8}};
        struct msghdr rm;
        memset(&rm, 0, sizeof(rm));
        rm.msg_iov = Rand() % 8 ? riov : (struct iovec*)bad;
        rm.msg_iovlen = Rand() % 8 ? 1 + Rand() % 2 : 1025;
        rm.msg_control = Rand() % 6 ? (void*)rctl : (void*)bad;
        size_t rls[] = {0, 1, 16, 20, 24, sizeof(rctl), SIZE_MAX};
        rm.msg_controllen = rls[Rand() % 7];
        if (rm.msg_controllen > sizeof(rctl) && rm.msg_control == rctl) {
          rm.msg_controllen = sizeof(rctl);
        }
        struct sockaddr_storage from;
        rm.msg_name = Rand() % 2 ? (void*)&from : NULL;
        rm.msg_namelen = Rand() % 5 ? sizeof(from) : (socklen_t)-1;
        ssize_t rr;
        if (Rand() % 8 == 0) {
          // Each message its own control buffer; a huge count.
          struct mmsghdr rmm[4];
          static char rctls[4][256] __attribute__((aligned(8)));
          for (int i = 0; i < 4; ++i) {
            rmm[i].msg_hdr = rm;
            rmm[i].msg_hdr.msg_control = rctls[i];
            rmm[i].msg_hdr.msg_controllen = sizeof(rctls[i]);
          }
          rr = recvmmsg(sv[1], rmm, Rand() % 2 ? 4 : UINT_MAX, MSG_DONTWAIT,
                        NULL);
          for (int i = 0; i < rr; ++i) CloseReceived(&rmm[i].msg_hdr);
          rr = -2;  // handled
        } else {
          rr = recvmsg(sv[1], &rm, MSG_DONTWAIT | (Rand() % 4 ? 0 : MSG_PEEK));
        }
        if (rr == -1 && !Plausible(errno)) FAIL("recvmsg: errno %d", errno);
        if (rr >= 0 && rm.msg_control == rctl) CloseReceived(&rm);
      }
    }
    close(sv[0]);
    close(sv[1]);
  }
  close(p[1]);
  if (!HupWithin(p[0])) FAIL("garbage: descriptors in flight not released");
  close(p[0]);
  munmap(bad, 4096);
  printf("garbage: %d messages, %d refused\n", 3 * iters, errs);
}

// ---- Race: threads passing, receiving and closing a shared pool. ----

enum { kSlots = 64 };
static int slots[kSlots];

static uint64_t ThreadRand(uint64_t* st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return *st;
}

static void PutSlot(int i, int fd) {
  int old = __atomic_exchange_n(&slots[i], fd, __ATOMIC_SEQ_CST);
  if (old >= 0) close(old);
}

static void* RaceThread(void* arg) {
  uint64_t st = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
  const int ops = 20000 * scale;
  for (int op = 0; op < ops; ++op) {
    int i = (int)(ThreadRand(&st) % kSlots);
    int j = (int)(ThreadRand(&st) % kSlots);
    int fd = __atomic_load_n(&slots[i], __ATOMIC_SEQ_CST);
    switch (ThreadRand(&st) % 8) {
      case 0: {
        int sv[2];
        if (socketpair(AF_UNIX, kTypes[ThreadRand(&st) % 3] | SOCK_CLOEXEC, 0,
                       sv) == 0) {
          PutSlot(i, sv[0]);
          PutSlot(j, sv[1]);
        }
        break;
      }
      case 1:
      case 2: {
        int fds[4];
        int n = 1 + (int)(ThreadRand(&st) % 4);
        for (int k = 0; k < n; ++k) {
          fds[k] = __atomic_load_n(&slots[ThreadRand(&st) % kSlots],
                                   __ATOMIC_SEQ_CST);
        }
        SendFds(fd, fds, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      }
      case 3:
      case 4: {
        char buf[16];
        char control[CMSG_SPACE(16 * sizeof(int))] __attribute__((aligned(8)));
        struct iovec iov = {buf, sizeof(buf)};
        struct msghdr m;
        memset(&m, 0, sizeof(m));
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = control;
        m.msg_controllen = sizeof(control);
        int fl = MSG_DONTWAIT | (ThreadRand(&st) % 4 == 0 ? MSG_PEEK : 0);
        if (recvmsg(fd, &m, fl) >= 0) {
          for (struct cmsghdr* h = CMSG_FIRSTHDR(&m); h != NULL;
               h = CMSG_NXTHDR(&m, h)) {
            if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) {
              continue;
            }
            int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int x = 0; x < k; ++x) {
              int got;
              memcpy(&got, CMSG_DATA(h) + x * sizeof(int), sizeof(got));
              if (ThreadRand(&st) % 2) {
                PutSlot((int)(ThreadRand(&st) % kSlots), got);
              } else {
                close(got);
              }
            }
          }
        }
        break;
      }
      case 5:
        PutSlot(i, -1);
        break;
      case 6:
        shutdown(fd, (int)(ThreadRand(&st) % 3));
        break;
      case 7: {
        int d = dup(fd);
        if (d >= 0) PutSlot(j, d);
        break;
      }
    }
  }
  return NULL;
}

static void Race(void) {
  int p[2];
  pipe2(p, O_CLOEXEC);
  for (int i = 0; i < kSlots; ++i) slots[i] = -1;
  slots[0] = p[1];
  enum { kThreads = 4 };
  pthread_t th[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    pthread_create(&th[t], NULL, RaceThread, (void*)(uintptr_t)(t + 1));
  }
  for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
  for (int i = 0; i < kSlots; ++i) PutSlot(i, -1);
  if (!HupWithin(p[0])) FAIL("race: descriptors in flight not released");
  close(p[0]);
  printf("race: %d threads x %d operations\n", kThreads, 20000 * scale);
}

// ---- Gcstorm: the collector's cost per release (a reproducer, timed). ----

// A chain DEPTH pairs deep hangs from one open pair (all reachable, no
// garbage), then CLOSES unrelated sockets are made and closed; each close
// starts a collection over everything in flight.
static void Gcstorm(int depth, int closes) {
  int head[2], held[2] = {-1, -1};
  Pair(SOCK_DGRAM, head);
  int prev = head[0];
  long t0 = NowMs();
  for (int i = 0; i < depth; ++i) {
    int sv[2];
    Pair(SOCK_DGRAM, sv);
    if (SendFds(prev, sv, 2, 0) != 1) {
      FAIL("gcstorm chain %d: %s", i, strerror(errno));
      break;
    }
    if (held[0] >= 0) {
      close(held[0]);
      close(held[1]);
    }
    held[0] = sv[0];
    held[1] = sv[1];
    prev = sv[0];
  }
  close(held[0]);
  close(held[1]);
  long t1 = NowMs();
  for (int i = 0; i < closes; ++i) TriggerCollection();
  long t2 = NowMs();
  close(head[0]);
  close(head[1]);
  TriggerCollection();
  long t3 = NowMs();
  printf(
      "gcstorm: chain of %d pairs built in %ld ms; %d unrelated closes in "
      "%ld ms (%.3f ms each); chain released in %ld ms\n",
      depth, t1 - t0, closes, t2 - t1,
      closes > 0 ? (double)(t2 - t1) / closes : 0.0, t3 - t2);
}

// ---- Abandon: exit with everything in flight and threads blocked. ----

static void* BlockSend(void* arg) {
  int fd = *(int*)arg;
  for (;;) send(fd, "b", 1, 0);
  return NULL;
}

static void Abandon(void) {
  int p[2];
  pipe2(p, 0);
  for (int r = 0; r < 20; ++r) OneRoundOfCycles(r, p[1]);
  static int sv[2];
  socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
  int fds[2] = {sv[0], sv[1]};
  SendFds(sv[0], fds, 2, 0);
  pthread_t t;
  for (int i = 0; i < 4; ++i) pthread_create(&t, NULL, BlockSend, &sv[0]);
  struct sockaddr_un a;
  socklen_t alen = Abstract(&a, "abandon", 0);
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  bind(l, (struct sockaddr*)&a, alen);
  listen(l, 0);
  static struct Connector cs[4];
  for (int i = 0; i < 4; ++i) {
    cs[i] = (struct Connector){&a, alen, -1, 0};
    pthread_create(&t, NULL, BlockingConnect, &cs[i]);
  }
  usleep(200000);
  printf("abandoning\n");
  fflush(stdout);
  _exit(0);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  const char* what = argc > 1 ? argv[1] : "all";
  int proc = 1;
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "--no-proc") == 0) {
      proc = 0;
    } else {
      scale = atoi(argv[i]) > 0 ? atoi(argv[i]) : 1;
    }
  }
  if (strcmp(what, "abandon") == 0) Abandon();
  if (strcmp(what, "gcstorm") == 0) {
    Gcstorm(argc > 2 ? atoi(argv[2]) : 5000, argc > 3 ? atoi(argv[3]) : 1000);
    return failures == 0 ? 0 : 1;
  }
  const int fds0 = FdCount();
  const int lines0 = UnixLines();
  const long t0 = NowMs();
  int all = strcmp(what, "all") == 0;
  if (all || strcmp(what, "cycles") == 0) Cycles();
  if (all || strcmp(what, "flood") == 0) Flood();
  if (all || strcmp(what, "storm") == 0) Storm();
  if (all || strcmp(what, "garbage") == 0) Garbage();
  if (all || strcmp(what, "race") == 0) Race();
  const int fds1 = FdCount();
  int lines1 = -1;
  // Collections may still be running (Linux's is a work item): bounded.
  for (long end = NowMs() + 10000; NowMs() < end;) {
    TriggerCollection();
    lines1 = UnixLines();
    if (!proc || lines1 <= lines0) break;
    usleep(20000);
  }
  printf("fds before=%d after=%d\n", fds0, fds1);
  if (fds1 != fds0) FAIL("descriptors leaked: %d -> %d", fds0, fds1);
  if (proc) {
    printf("unix sockets before=%d after=%d\n", lines0, lines1);
    if (lines0 < 0 || lines1 != lines0) {
      FAIL("/proc/net/unix: %d lines before, %d after", lines0, lines1);
    }
  }
  printf("elapsed %ld ms\n", NowMs() - t0);
  if (failures == 0) printf("sock_hostile ok\n");
  return failures == 0 ? 0 : 1;
}
