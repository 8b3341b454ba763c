// Exercises brk and mmap through malloc, and mprotect/munmap directly.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(void) {
  size_t total = 0;
  for (int i = 0; i < 1000; ++i) {
    size_t n = (i % 7 + 1) * 1000;
    char* p = malloc(n);
    if (!p) return 1;
    memset(p, i, n);
    total += n;
    if (i % 3) free(p);
  }
  char* big = malloc(64 << 20);
  if (!big) return 2;
  memset(big, 1, 64 << 20);
  free(big);
  // Large blocks are mmapped; realloc grows them with mremap.
  char* r = malloc(1 << 20);
  if (!r) return 6;
  r[12345] = 9;
  r = realloc(r, 16 << 20);
  if (!r || r[12345] != 9) return 7;
  r[(16 << 20) - 1] = 1;
  free(r);
  char* m = mmap(0, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 3;
  if (mprotect(m, 8192, PROT_READ | PROT_WRITE)) return 4;
  m[5000] = 7;
  if (munmap(m, 8192)) return 5;
  printf("malloc ok %zu\n", total);
  return 0;
}
