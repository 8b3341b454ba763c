// Run inside `runsc do` by mount_lock_test as a hostile root guest with
// CAP_SYS_ADMIN: it tries to uncover what the sandbox's own mounts cover
// (the host's /tmp under the sandbox's /tmp) and to see host mount points.
// One line per check ("ok NAME" or "FAIL NAME: why"); exit 0 if all passed.
//   mount_probe tmp CANARY    the host file /tmp/CANARY is never visible:
//                             umount, lazy umount, plain bind of /, rbind
//                             of / (also lazily unmounted while held),
//                             move, remount, unbindable-then-rbind
//   mount_probe empty DIR...  each DIR (a host mount point or /run) is an
//                             empty directory, also through an rbind of /
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
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

// Entries of the directory open at `fd`/`path` other than . and ..; -1 if
// it cannot be listed. `name` (if not null) is set if one is `want`.
static int entries(int dirfd, const char* path, const char* want, int* found) {
  int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -1;
  DIR* d = fdopendir(fd);
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    ++n;
    if (want && found && strcmp(e->d_name, want) == 0) *found = 1;
  }
  closedir(d);
  return n;
}

// Neither stat nor a listing of dirfd/dir shows `canary`.
static void absent(int dirfd, const char* dir, const char* canary,
                   const char* name) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, canary);
  errno = 0;
  int r = fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW);
  check(r < 0 && errno == ENOENT, name, path);
  int found = 0;
  entries(dirfd, dir, canary, &found);
  errno = 0;
  check(!found, name, "listed");
}

static void fails(int r, int err, const char* name) {
  int e = errno;
  char why[64];
  snprintf(why, sizeof why, "want %s, got %d", strerror(err), r);
  errno = e;
  check(r < 0 && e == err, name, why);
}

static int probe_tmp(const char* canary) {
  absent(AT_FDCWD, "/tmp", canary, "tmp itself");
  fails(umount2("/tmp", 0), EINVAL, "umount /tmp");
  fails(umount2("/tmp", MNT_DETACH), EINVAL, "umount -l /tmp");
  fails(umount2("/tmp", MNT_FORCE), EINVAL, "umount -f /tmp");
  fails(umount2("/proc", MNT_DETACH), EINVAL, "umount -l /proc");
  absent(AT_FDCWD, "/tmp", canary, "tmp after umount");

  mkdir("/mnt", 0755);
  check(mkdir("/mnt/x", 0755) == 0 || errno == EEXIST, "mkdir /mnt/x", "");
  check(mkdir("/mnt/y", 0755) == 0 || errno == EEXIST, "mkdir /mnt/y", "");
  check(mkdir("/mnt/z", 0755) == 0 || errno == EEXIST, "mkdir /mnt/z", "");
  fails(mount("/", "/mnt/x", NULL, MS_BIND, NULL), EINVAL, "bind / (plain)");
  absent(AT_FDCWD, "/mnt/x/tmp", canary, "plain bind tmp");
  fails(mount("/tmp", "/mnt/z", NULL, MS_MOVE, NULL), EINVAL, "move /tmp");

  check(mount("/", "/mnt/y", NULL, MS_BIND | MS_REC, NULL) == 0, "rbind /",
        "mount");
  absent(AT_FDCWD, "/mnt/y/tmp", canary, "rbind tmp");
  // The copies below an rbind are locked too; its top is not.
  fails(umount2("/mnt/y/tmp", 0), EINVAL, "umount rbind's tmp");
  fails(umount2("/mnt/y/tmp", MNT_DETACH), EINVAL, "umount -l rbind's tmp");
  fails(mount("/mnt/y", "/mnt/x", NULL, MS_BIND, NULL), EINVAL,
        "plain bind of the rbind");
  // Held open, then lazily unmounted: the locked copies stay connected.
  int held = open("/mnt/y", O_PATH | O_DIRECTORY);
  check(held >= 0, "hold rbind", "open");
  check(umount2("/mnt/y", MNT_DETACH) == 0, "umount -l rbind", "umount2");
  absent(held, "tmp", canary, "detached rbind tmp");
  int empty = entries(held, "tmp", NULL, NULL);
  check(empty == 0, "detached rbind tmp empty", "entries");
  close(held);

  // Remounts may not clear a locked flag (/proc is nosuid,nodev,noexec).
  fails(mount(NULL, "/proc", NULL, MS_REMOUNT | MS_BIND, NULL), EPERM,
        "remount /proc without nosuid");
  check(
      mount(NULL, "/proc", NULL,
            MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0,
      "remount /proc keeping its flags", "mount");
  fails(mount(NULL, "/proc", NULL,
              MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC |
                  MS_NOATIME,
              NULL),
        EPERM, "remount /proc noatime");

  // A locked mount made unbindable cannot be left out of an rbind.
  check(mount(NULL, "/tmp", NULL, MS_UNBINDABLE, NULL) == 0,
        "make /tmp unbindable", "mount");
  fails(mount("/", "/mnt/z", NULL, MS_BIND | MS_REC, NULL), EPERM,
        "rbind / over unbindable /tmp");
  absent(AT_FDCWD, "/mnt/z/tmp", canary, "unbindable rbind tmp");
  return failures == 0 ? 0 : 1;
}

static int probe_empty(int n, char** dirs) {
  mkdir("/mnt", 0755);
  check(mkdir("/mnt/r", 0755) == 0 || errno == EEXIST, "mkdir /mnt/r", "");
  check(mount("/", "/mnt/r", NULL, MS_BIND | MS_REC, NULL) == 0, "rbind /",
        "mount");
  for (int i = 0; i < n; ++i) {
    struct stat st;
    char name[600];
    snprintf(name, sizeof name, "%s is a directory", dirs[i]);
    check(stat(dirs[i], &st) == 0 && S_ISDIR(st.st_mode), name, dirs[i]);
    snprintf(name, sizeof name, "%s is empty", dirs[i]);
    check(entries(AT_FDCWD, dirs[i], NULL, NULL) == 0, name, dirs[i]);
    char via[600];
    snprintf(via, sizeof via, "/mnt/r%s", dirs[i]);
    snprintf(name, sizeof name, "%s is empty through an rbind", dirs[i]);
    check(entries(AT_FDCWD, via, NULL, NULL) == 0, name, via);
  }
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "tmp") == 0) return probe_tmp(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "empty") == 0) {
    return probe_empty(argc - 2, argv + 2);
  }
  return 2;
}
