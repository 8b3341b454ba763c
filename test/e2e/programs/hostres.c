// A hostile guest for the host-resource tests (test/e2e/host_resources_test):
//   hostres forks       fork until fork fails, keep the children; report the
//                       errno; let them go; fork again.
//   hostres opens DIR   open every file below DIR until an open fails for
//                       want of a resource; report; close them all; then
//                       open and exec.
//   hostres fallocate   print "go", then fallocate 1 PiB on /tmp/big.
//   hostres populate    print "go", then mmap 1 TiB of a /tmp file with
//                       MAP_SHARED|MAP_POPULATE.
//   hostres memhog      print "go", then fork children that each touch
//                       memory until they are killed, forever (past
//                       --memory the OOM killer takes them, init stays).
//   hostres threads     print "go", then make threads until clone fails,
//                       then make them again as they are refused, forever.
//   hostres fdhog       print "go", then dup descriptors until dup fails,
//                       then keep asking.
//   hostres getdents    make a /tmp directory of 100,000 entries, print
//                       "go", then list it with getdents64 forever.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int Forks(void) {
  int p[2];
  if (pipe(p) != 0) return 2;
  int n = 0, err = 0;
  for (; n < 100000; ++n) {
    pid_t c = fork();
    if (c < 0) {
      err = errno;
      break;
    }
    if (c == 0) {
      char b;
      close(p[1]);
      (void)!read(p[0], &b, 1);  // until the parent lets go
      _exit(0);
    }
  }
  close(p[1]);  // every child's read returns 0
  int reaped = 0;
  while (wait(NULL) > 0) ++reaped;
  pid_t c = fork();
  if (c == 0) _exit(7);
  int st = 0;
  int after =
      c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 7;
  printf("forks=%d errno=%s reaped=%d after=%d\n", n,
         err ? strerrorname_np(err) : "none", reaped, after);
  return 0;
}

static int* fds;
static int nfds, cap, open_err;

static void Hold(int fd) {
  if (nfds == cap) {
    cap = cap ? 2 * cap : 1024;
    fds = realloc(fds, cap * sizeof(int));
  }
  fds[nfds++] = fd;
}

static int Fatal(int e) { return e == EMFILE || e == ENFILE || e == ENOMEM; }

// Opens every regular file below `dir` (depth first, one directory stream
// at a time) and keeps it open; stops at the first open or opendir that
// fails for want of a resource (open_err).
static void OpenTree(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) {
    if (Fatal(errno)) open_err = errno;
    return;
  }
  char** subdirs = NULL;
  int nsub = 0;
  struct dirent* e;
  while (!open_err && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    if (e->d_type == DT_DIR) {
      subdirs = realloc(subdirs, (nsub + 1) * sizeof(char*));
      subdirs[nsub++] = strdup(path);
    } else if (e->d_type == DT_REG) {
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        Hold(fd);
      } else if (Fatal(errno)) {
        open_err = errno;
      }
    }
  }
  closedir(d);
  for (int i = 0; i < nsub; ++i) {
    if (!open_err) OpenTree(subdirs[i]);
    free(subdirs[i]);
  }
  free(subdirs);
}

static int Opens(const char* dir, const char* exe) {
  struct rlimit r = {1 << 20, 1 << 20};
  setrlimit(RLIMIT_NOFILE, &r);  // the guest's own table is not the limit
  OpenTree(dir);
  for (int i = 0; i < nfds; ++i) close(fds[i]);
  int again = open(exe, O_RDONLY | O_CLOEXEC);
  int open_ok = again >= 0;
  if (again >= 0) close(again);
  pid_t c = fork();
  if (c == 0) {
    char* argv[] = {(char*)exe, "exit7", NULL};
    execv(exe, argv);
    _exit(100 + errno);
  }
  int st = 0;
  waitpid(c, &st, 0);
  printf("opened=%d errno=%s open_after=%d exec_after=%d\n", nfds,
         open_err ? strerrorname_np(open_err) : "none", open_ok,
         WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return 0;
}

static int Fallocate(void) {
  int fd = open("/tmp/big", O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 2;
  printf("go\n");
  fflush(stdout);
  int r = fallocate(fd, 0, 0, 1ll << 50);
  printf("fallocate=%d errno=%s\n", r, r ? strerrorname_np(errno) : "none");
  fflush(stdout);
  pause();
  return 0;
}

static int Populate(void) {
  int fd = open("/tmp/big", O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, 1ll << 40) != 0) return 2;
  printf("go\n");
  fflush(stdout);
  void* p = mmap(NULL, 1ll << 40, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_POPULATE, fd, 0);
  printf("mmap=%s\n", p == MAP_FAILED ? strerrorname_np(errno) : "ok");
  fflush(stdout);
  pause();
  return 0;
}

static int MemHog(void) {
  printf("go\n");
  fflush(stdout);
  for (;;) {
    pid_t c = fork();
    if (c == 0) {
      for (;;) {
        char* p = malloc(1 << 20);
        if (p == NULL) continue;
        memset(p, 1, 1 << 20);
      }
    }
    if (c > 0) waitpid(c, NULL, 0);
  }
}

static void* Sleeper(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static int Threads(void) {
  printf("go\n");
  fflush(stdout);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024);
  for (;;) {
    pthread_t t;
    if (pthread_create(&t, &a, Sleeper, NULL) != 0) sched_yield();
  }
}

static int FdHog(void) {
  printf("go\n");
  fflush(stdout);
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  for (;;) {
    if (dup(1) < 0) sched_yield();
  }
}

static int Getdents(void) {
  if (mkdir("/tmp/huge", 0700) != 0 && errno != EEXIST) return 2;
  char name[64];
  for (int i = 0; i < 100000; ++i) {
    snprintf(name, sizeof(name), "/tmp/huge/entry-with-a-long-name-%06d", i);
    int fd = open(name, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return 3;
    close(fd);
  }
  printf("go\n");
  fflush(stdout);
  static char buf[1 << 20];
  for (;;) {
    int d = open("/tmp/huge", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return 4;
    while (syscall(SYS_getdents64, d, buf, sizeof(buf)) > 0) {
    }
    close(d);
  }
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "exit7") == 0) return 7;
  if (argc >= 2 && strcmp(argv[1], "forks") == 0) return Forks();
  if (argc >= 3 && strcmp(argv[1], "opens") == 0)
    return Opens(argv[2], argv[0]);
  if (argc >= 2 && strcmp(argv[1], "fallocate") == 0) return Fallocate();
  if (argc >= 2 && strcmp(argv[1], "populate") == 0) return Populate();
  if (argc >= 2 && strcmp(argv[1], "memhog") == 0) return MemHog();
  if (argc >= 2 && strcmp(argv[1], "threads") == 0) return Threads();
  if (argc >= 2 && strcmp(argv[1], "fdhog") == 0) return FdHog();
  if (argc >= 2 && strcmp(argv[1], "getdents") == 0) return Getdents();
  fprintf(stderr,
          "usage: hostres forks|opens DIR|fallocate|populate|memhog|threads|"
          "fdhog|getdents\n");
  return 2;
}
