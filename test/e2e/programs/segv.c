// Dereferences a bad pointer: the guest dies with SIGSEGV.
#include <stdio.h>

int main(void) {
  printf("about to fault\n");
  fflush(stdout);
  *(volatile int*)16 = 1;
  printf("still alive\n");
  return 0;
}
