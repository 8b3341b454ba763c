// Run inside `runsc do` by overlay_test: exercises the overlay root and
// prints one line per check ("ok NAME" or "FAIL NAME: why"), exit 0 if all
// passed.
//   overlay_probe write NAME   writes /etc/NAME, reads it back, removes
//                              /etc/os-release and checks it is gone (stat,
//                              open, getdents of /etc), then /etc/NAME is
//                              listed and /etc/os-release is not
//   overlay_probe absent NAME  /etc/NAME does not exist, /etc/os-release does
//   overlay_probe erofs NAME   creating /etc/NAME fails with EROFS
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

static void check(int cond, const char* name, const char* why) {
  if (cond) {
    printf("ok %s\n", name);
  } else {
    printf("FAIL %s: %s (errno %s)\n", name, why, strerror(errno));
    ++failures;
  }
}

static int listed(const char* dir, const char* name) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int found = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, name) == 0) ++found;
  }
  closedir(d);
  return found;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  char path[512];
  snprintf(path, sizeof path, "/etc/%s", argv[2]);
  struct stat st;
  if (strcmp(argv[1], "write") == 0) {
    const char data[] = "written inside the sandbox\n";
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    check(fd >= 0, "create", path);
    check(write(fd, data, sizeof data - 1) == sizeof data - 1, "write", path);
    close(fd);
    char buf[128] = {0};
    fd = open(path, O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    check(n == sizeof data - 1 && strcmp(buf, data) == 0, "read back", buf);
    check(listed("/etc", argv[2]) == 1, "listed once", path);
    check(stat("/etc/os-release", &st) == 0, "os-release before", "stat");
    check(unlink("/etc/os-release") == 0, "unlink os-release", "unlink");
    check(stat("/etc/os-release", &st) < 0 && errno == ENOENT,
          "os-release gone", "stat");
    check(open("/etc/os-release", O_RDONLY) < 0 && errno == ENOENT,
          "os-release open", "open");
    check(listed("/etc", "os-release") == 0, "os-release not listed",
          "getdents");
    check(listed("/etc", argv[2]) == 1, "still listed once", path);
    // A host file edited in place (copy-up) and read back.
    fd = open("/etc/hostname", O_WRONLY | O_APPEND);
    if (fd >= 0) {
      check(write(fd, "x", 1) == 1, "append to hostname", "write");
      close(fd);
    }
  } else if (strcmp(argv[1], "absent") == 0) {
    check(stat(path, &st) < 0 && errno == ENOENT, "absent", path);
    check(stat("/etc/os-release", &st) == 0, "os-release present", "stat");
  } else if (strcmp(argv[1], "erofs") == 0) {
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    check(fd < 0 && errno == EROFS, "erofs", path);
  } else {
    return 2;
  }
  return failures ? 1 : 0;
}
