// Hostile probes of the sandbox's resource limits and of the stub memory a
// guest can read (test/e2e/limits_test.cc runs them under `runsc do`):
//   hog MIB         a child allocates and touches MIB MiB; the parent (init)
//                   survives and prints how the child ended
//   hogself MIB     this process allocates and touches MIB MiB itself
//   forks           forks sleeping children until fork fails; prints the
//                   count and errno, then kills them
//   threads         starts sleeping threads until pthread_create fails;
//                   prints the count and error, then exits
//   stubscan        finds the stub region above the guest's mappings (the
//                   params block's magic) and writes what it can read of it
//                   to stdout, then waits for stdin to close
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int Hog(long mib) {
  const size_t chunk = 16 << 20;
  for (long done = 0; done < mib; done += 16) {
    char* p = mmap(NULL, chunk, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      printf("mmap failed: %s\n", strerror(errno));
      return 1;
    }
    for (size_t i = 0; i < chunk; i += 4096) p[i] = 1;
  }
  printf("hog survived\n");
  return 0;
}

static int HogChild(long mib) {
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) _exit(Hog(mib));
  int status;
  if (waitpid(pid, &status, 0) != pid) return 1;
  if (WIFSIGNALED(status)) {
    printf("child killed by signal %d\n", WTERMSIG(status));
  } else {
    printf("child exited %d\n", WEXITSTATUS(status));
  }
  // init goes on and can still allocate what the child gave back.
  char* p = malloc(32 << 20);
  if (p == NULL) return 1;
  memset(p, 1, 32 << 20);
  printf("init survived\n");
  return 0;
}

static int Forks(void) {
  enum { kMax = 100000 };
  static pid_t kids[kMax];
  int n = 0, err = 0;
  while (n < kMax) {
    pid_t pid = fork();
    if (pid < 0) {
      err = errno;
      break;
    }
    if (pid == 0) {
      pause();
      _exit(0);
    }
    kids[n++] = pid;
  }
  printf("forked %d, then errno %d (%s)\n", n, err, strerror(err));
  fflush(stdout);
  for (int i = 0; i < n; ++i) kill(kids[i], SIGKILL);
  for (int i = 0; i < n; ++i) waitpid(kids[i], NULL, 0);
  return err == EAGAIN ? 0 : 1;
}

static void* Sleep(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static int Threads(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  int n = 0, err = 0;
  for (; n < 100000; ++n) {
    pthread_t t;
    err = pthread_create(&t, &attr, Sleep, NULL);
    if (err != 0) break;
  }
  printf("threads %d, then error %d (%s)\n", n, err, strerror(err));
  fflush(stdout);
  return err == EAGAIN ? 0 : 1;
}

static sigjmp_buf probe_env;
static void OnFault(int sig) {
  (void)sig;
  siglongjmp(probe_env, 1);
}

// Whether the page at `addr` can be read (a fault is caught).
static int Readable(volatile const uint8_t* addr, uint8_t* out) {
  if (sigsetjmp(probe_env, 1) != 0) return 0;
  *out = *addr;
  return 1;
}

static int StubScan(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnFault;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  // Candidates: 1 GiB aligned, from 0x7e0000000000 down (where systrap puts
  // its stubs); the params block starts with "PARTSYS\0" (the magic).
  const uint64_t kMagic = 0x53595354524150ull;
  uintptr_t base = 0;
  for (uintptr_t cand = 0x7e0000000000; cand > 0x7c0000000000;
       cand -= 0x40000000) {
    uint8_t b;
    if (!Readable((const uint8_t*)cand, &b)) continue;
    uint64_t m;
    memcpy(&m, (const void*)cand, sizeof(m));
    if (m == kMagic) {
      base = cand;
      break;
    }
  }
  if (base == 0) {
    fprintf(stderr, "no stub region found\n");
    return 2;
  }
  // Every readable page of the first 4 MiB (params, code, request and
  // result pages, the first thread regions), as raw bytes.
  static uint8_t page[4096];
  size_t pages = 0;
  for (uintptr_t a = base; a < base + (4 << 20); a += 4096) {
    uint8_t b;
    if (!Readable((const uint8_t*)a, &b)) continue;
    memcpy(page, (const void*)a, sizeof(page));
    fwrite(page, 1, sizeof(page), stdout);
    ++pages;
  }
  fflush(stdout);
  fprintf(stderr, "stub region at %#lx: %zu pages readable\n",
          (unsigned long)base, pages);
  fprintf(stdout, "END-OF-STUB-DUMP\n");
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);
  if (argc >= 3 && strcmp(argv[1], "hog") == 0) {
    return HogChild(atol(argv[2]));
  }
  if (argc >= 3 && strcmp(argv[1], "hogself") == 0) return Hog(atol(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "forks") == 0) return Forks();
  if (argc >= 2 && strcmp(argv[1], "threads") == 0) return Threads();
  if (argc >= 2 && strcmp(argv[1], "stubscan") == 0) return StubScan();
  fprintf(stderr,
          "usage: limits_probe hog|hogself MIB | forks | threads | "
          "stubscan\n");
  return 2;
}
