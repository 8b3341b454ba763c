// Prints "before", makes syscalls the sandbox does not implement (uselib,
// removed from Linux 6.x too, and number 1000, which no kernel has), then
// prints "after" without a newline and exits 0 if both failed with ENOSYS.
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  printf("before\n");
  fflush(stdout);
  long a = syscall(134 /* uselib */, 0);
  int ea = errno;
  long b = syscall(1000);
  int eb = errno;
  printf("after");
  fflush(stdout);
  return a == -1 && ea == ENOSYS && b == -1 && eb == ENOSYS ? 0 : 1;
}
