// Run inside `runsc do --bind=DIR` by bind_nosuid_test: the guest (root)
// tries to plant privileges in the host directory DIR. Prints one line per
// step ("ok NAME" or "FAIL NAME: why"); exit 0 if every step did what the
// guest expects of Linux (the host side is checked by the test).
//   bind_nosuid_probe attack DIR  every attack below
//   bind_nosuid_probe suid DIR    DIR/planted: chown 0:0, chmod 04755
//   bind_nosuid_probe exec DIR    DIR/x: a copy of this program, 04755;
//                                 run as uid 65534, it prints its euid
//   bind_nosuid_probe euid        prints "euid N"
//   bind_nosuid_probe mount DIR   prints "mount OPTIONS" of DIR's mount
//   bind_nosuid_probe wait        prints "ready", waits for EOF on stdin
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static int failures;
static char path_buf[4][4096];

static void check(int cond, const char* name, const char* why) {
  if (cond) {
    printf("ok %s\n", name);
  } else {
    printf("FAIL %s: %s (errno %s)\n", name, why, strerror(errno));
    ++failures;
  }
}

// DIR/NAME in one of four rotating buffers (two may be used at once).
static const char* at(const char* dir, const char* name) {
  static int next;
  char* b = path_buf[next++ % 4];
  snprintf(b, sizeof(path_buf[0]), "%s/%s", dir, name);
  return b;
}

// Writes `len` bytes of `data` to a new file at path with mode.
static int write_file(const char* path, int mode, const char* data,
                      size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return -1;
  int ok = write(fd, data, len) == (ssize_t)len;
  close(fd);
  return ok ? 0 : -1;
}

// Copies src to dst (created with mode 0700), as cp does.
static int copy(const char* src, const char* dst) {
  int in = open(src, O_RDONLY);
  if (in < 0) return -1;
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0700);
  if (out < 0) {
    close(in);
    return -1;
  }
  char buf[65536];
  ssize_t n;
  int ok = 1;
  while ((n = read(in, buf, sizeof(buf))) > 0) {
    if (write(out, buf, n) != n) ok = 0;
  }
  close(in);
  close(out);
  return ok && n == 0 ? 0 : -1;
}

static void attack(const char* dir, const char* self) {
  // chown 0:0 && chmod 4755 of a copied executable; chmod u+s; g+s.
  check(copy(self, at(dir, "copied")) == 0, "copy", "cannot copy");
  check(chown(at(dir, "copied"), 0, 0) == 0, "chown-0", "chown 0:0");
  check(chmod(at(dir, "copied"), 04755) == 0, "chmod-4755", "chmod 4755");
  check(chmod(at(dir, "copied"), 02755) == 0, "chmod-2755", "chmod 2755");
  check(chmod(at(dir, "copied"), 06755) == 0, "chmod-6755", "chmod 6755");
  // open(O_CREAT, 06755), then fchmod of the descriptor.
  int fd = open(at(dir, "created"), O_WRONLY | O_CREAT | O_EXCL, 06755);
  check(fd >= 0, "open-creat-6755", "open");
  if (fd >= 0) {
    check(fchmod(fd, 06755) == 0, "fchmod-6755", "fchmod");
    close(fd);
  }
  check(fchmodat(AT_FDCWD, at(dir, "created"), 04711, 0) == 0, "fchmodat-4711",
        "fchmodat");
  // S_ISGID alone on a file without group execute.
  check(write_file(at(dir, "sgid"), 02644, "x", 1) == 0 &&
            chmod(at(dir, "sgid"), 02644) == 0,
        "chmod-2644", "chmod 2644");
  // mkdir 06755.
  check(mkdir(at(dir, "dir"), 06755) == 0 && chmod(at(dir, "dir"), 06755) == 0,
        "mkdir-6755", "mkdir");
  // Device nodes: EPERM (never on the host). FIFOs are fine.
  errno = 0;
  check(mknod(at(dir, "null"), S_IFCHR | 0666, makedev(1, 3)) != 0 &&
            errno == EPERM,
        "mknod-chr-eperm", "mknod c 1 3 did not fail with EPERM");
  errno = 0;
  check(mknod(at(dir, "blk"), S_IFBLK | 0666, makedev(7, 0)) != 0 &&
            errno == EPERM,
        "mknod-blk-eperm", "mknod b 7 0 did not fail with EPERM");
  check(mknod(at(dir, "fifo"), S_IFIFO | 06644, 0) == 0, "mknod-fifo",
        "mkfifo");
  // File capabilities and other privileged xattrs: refused.
  static const unsigned char caps[20] = {0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff,
                                         0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  check(setxattr(at(dir, "copied"), "security.capability", caps, sizeof(caps),
                 0) != 0,
        "setxattr-security-capability-refused", "setxattr succeeded");
  check(setxattr(at(dir, "copied"), "trusted.planted", "x", 1, 0) != 0,
        "setxattr-trusted-refused", "setxattr succeeded");
  // Giving a file to another host user: EINVAL, as an unmapped id.
  errno = 0;
  check(chown(at(dir, "copied"), 1000, 1000) != 0 && errno == EINVAL,
        "chown-1000-einval", "chown 1000:1000 did not fail with EINVAL");
  errno = 0;
  check(chown(at(dir, "copied"), -1, 1000) != 0 && errno == EINVAL,
        "chgrp-1000-einval", "chgrp 1000 did not fail with EINVAL");
  // A setuid file made on the sandbox's tmpfs and in the overlay root:
  // rename and link into the bind cross mounts (EXDEV); the copy mv then
  // makes (create, chown, chmod) loses the bits.
  const char* sources[] = {"/tmp/setuid-src", "/setuid-overlay-src"};
  for (int i = 0; i < 2; ++i) {
    const char* src = sources[i];
    check(
        write_file(src, 0755, "#!/bin/sh\n", 10) == 0 && chmod(src, 04755) == 0,
        "make-setuid-source", src);
    struct stat st;
    check(stat(src, &st) == 0 && (st.st_mode & 07777) == 04755,
          "setuid-source-has-bits", src);
    errno = 0;
    const char* dst = at(dir, i == 0 ? "renamed-tmp" : "renamed-overlay");
    check(rename(src, dst) != 0 && errno == EXDEV, "rename-exdev", src);
    errno = 0;
    check(link(src, dst) != 0 && errno == EXDEV, "link-exdev", src);
    check(copy(src, dst) == 0 && chown(dst, 0, 0) == 0 &&
              chmod(dst, st.st_mode & 07777) == 0,
          "mv-fallback-copy", src);
    unlink(src);
  }
  // A hard link, inside the bind, of a file the guest made setuid.
  check(link(at(dir, "copied"), at(dir, "hardlink")) == 0, "link-in-bind",
        "link");
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "euid") == 0) {
    printf("euid %d\n", (int)geteuid());
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "wait") == 0) {
    printf("ready\n");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s attack|suid|exec|mount DIR\n", argv[0]);
    return 2;
  }
  const char* dir = argv[2];
  if (strcmp(argv[1], "attack") == 0) {
    attack(dir, argv[0]);
  } else if (strcmp(argv[1], "suid") == 0) {
    check(write_file(at(dir, "planted"), 0755, "x", 1) == 0 &&
              chown(at(dir, "planted"), 0, 0) == 0 &&
              chmod(at(dir, "planted"), 04755) == 0,
          "plant", "chown/chmod");
  } else if (strcmp(argv[1], "exec") == 0) {
    char x[4096];
    snprintf(x, sizeof(x), "%s/x", dir);
    check(copy(argv[0], x) == 0 && chmod(x, 04755) == 0, "plant-exe", x);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
      execl(x, x, "euid", (char*)NULL);
      _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exec-as-nobody",
          "child failed");
  } else if (strcmp(argv[1], "mount") == 0) {
    FILE* f = fopen("/proc/mounts", "r");
    char line[4096];
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
      char src[1024], point[1024], type[64], opts[1024];
      if (sscanf(line, "%1023s %1023s %63s %1023s", src, point, type, opts) ==
              4 &&
          strcmp(point, dir) == 0) {
        printf("mount %s\n", opts);
      }
    }
    if (f != NULL) fclose(f);
  } else {
    return 2;
  }
  return failures == 0 ? 0 : 1;
}
