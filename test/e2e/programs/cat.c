// Copies stdin to stdout (a blocking read on an inherited FD).
#include <unistd.h>

int main(void) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(0, buf, sizeof(buf));
    if (n <= 0) return n < 0 ? 1 : 0;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(1, buf + off, n - off);
      if (w <= 0) return 2;
      off += w;
    }
  }
}
