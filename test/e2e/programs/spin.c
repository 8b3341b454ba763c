// Spins (no syscalls) until killed; prints a line first.
#include <stdio.h>

int main(void) {
  printf("spinning\n");
  fflush(stdout);
  for (volatile unsigned long i = 0;; ++i) {
  }
}
