// Syscalls with bad pointers fail with EFAULT and the program goes on.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  int fails = 0;
  long r = syscall(SYS_write, 1, (void*)1, 10);
  if (r != -1 || errno != EFAULT) {
    printf("write(bad ptr) = %ld errno %d\n", r, errno);
    fails++;
  }
  r = syscall(SYS_write, 1, (void*)0xffffffffffff0000ull, 10);
  if (r != -1 || errno != EFAULT) {
    printf("write(kernel ptr) = %ld errno %d\n", r, errno);
    fails++;
  }
  r = syscall(SYS_uname, (void*)16);
  if (r != -1 || errno != EFAULT) {
    printf("uname(bad ptr) = %ld errno %d\n", r, errno);
    fails++;
  }
  r = syscall(SYS_readlink, (void*)8, (void*)0, 10);
  if (r != -1 || errno != EFAULT) {
    printf("readlink(bad ptr) = %ld errno %d\n", r, errno);
    fails++;
  }
  r = syscall(12345);
  if (r != -1 || errno != ENOSYS) {
    printf("syscall(12345) = %ld errno %d\n", r, errno);
    fails++;
  }
  char exe[256] = {0};
  r = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  printf("exe=%s\n", r > 0 ? exe : "(error)");
  printf(fails ? "FAIL\n" : "EFAULT ok\n");
  return fails;
}
