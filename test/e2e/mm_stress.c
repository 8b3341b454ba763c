/* Exercises the MemoryManager from inside the sandbox: brk, anonymous mmap
 * (private and shared), munmap holes, mprotect, large malloc/realloc, and
 * checks every byte it wrote. Prints "mm ok" and exits 0 on success, or
 * says what failed and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHECK(c)                                             \
  do {                                                       \
    if (!(c)) {                                              \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);    \
      return 1;                                              \
    }                                                        \
  } while (0)

static uint8_t pattern(uintptr_t a) { return (uint8_t)(a * 131 + (a >> 12)); }

int main(void) {
  const size_t page = 4096;
  /* brk grows and shrinks. */
  uint8_t* b0 = sbrk(0);
  CHECK(b0 != (void*)-1);
  CHECK(sbrk(3 * page + 123) == b0);
  for (size_t i = 0; i < 3 * page + 123; ++i) b0[i] = pattern(i);
  for (size_t i = 0; i < 3 * page + 123; ++i) CHECK(b0[i] == pattern(i));
  CHECK(sbrk(-(intptr_t)(2 * page)) != (void*)-1);
  CHECK(sbrk(0) == b0 + page + 123);

  /* Many anonymous mappings, written across fault windows. */
  enum { kMaps = 200 };
  static uint8_t* maps[kMaps];
  for (int i = 0; i < kMaps; ++i) {
    size_t len = (size_t)(i % 7 + 1) * 37 * page;
    maps[i] = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(maps[i] != MAP_FAILED);
    for (size_t off = 0; off < len; off += 997) maps[i][off] = pattern(off + i);
  }
  for (int i = 0; i < kMaps; ++i) {
    size_t len = (size_t)(i % 7 + 1) * 37 * page;
    for (size_t off = 0; off < len; off += 997) {
      CHECK(maps[i][off] == pattern(off + i));
    }
    /* Punch a hole, keep both sides. */
    if (len > 4 * page) {
      CHECK(munmap(maps[i] + page, page) == 0);
      CHECK(maps[i][0] == pattern(i));
      size_t k = (2 * page + 996) / 997 * 997;  /* a byte written above */
      CHECK(maps[i][k] == pattern(k + i));
    }
  }
  for (int i = 0; i < kMaps; ++i) {
    size_t len = (size_t)(i % 7 + 1) * 37 * page;
    CHECK(munmap(maps[i], len) == 0);
  }

  /* A 64 MiB region touched sparsely, then mprotect'ed read-only. */
  size_t big = 64u << 20;
  uint8_t* p = mmap(NULL, big, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(p != MAP_FAILED);
  for (size_t off = 0; off < big; off += 65536 + 8) p[off] = pattern(off);
  CHECK(mprotect(p, big / 2, PROT_READ) == 0);
  for (size_t off = 0; off < big; off += 65536 + 8) CHECK(p[off] == pattern(off));
  CHECK(mprotect(p, big, PROT_READ | PROT_WRITE) == 0);
  p[5] = 42;
  CHECK(p[5] == 42);
  CHECK(munmap(p, big) == 0);

  /* MAP_FIXED over part of a mapping gives zeros there. */
  uint8_t* q = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(q != MAP_FAILED);
  memset(q, 0xab, 8 * page);
  CHECK(mmap(q + 2 * page, page, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == q + 2 * page);
  CHECK(q[2 * page] == 0 && q[3 * page] == 0xab && q[page] == 0xab);
  CHECK(mmap(q, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
             MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED);

  /* Shared anonymous memory. */
  uint32_t* s = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(s != MAP_FAILED);
  for (size_t i = 0; i < 3 * page / 4; ++i) s[i] = (uint32_t)i * 3;
  for (size_t i = 0; i < 3 * page / 4; ++i) CHECK(s[i] == (uint32_t)i * 3);

  /* malloc's mmap path and realloc (mremap or copy). */
  size_t n = 3u << 20;
  uint8_t* m = malloc(n);
  CHECK(m != NULL);
  for (size_t i = 0; i < n; i += 4093) m[i] = pattern(i);
  m = realloc(m, 5 * n);
  CHECK(m != NULL);
  for (size_t i = 0; i < n; i += 4093) CHECK(m[i] == pattern(i));
  free(m);

  printf("mm ok\n");
  return 0;
}
