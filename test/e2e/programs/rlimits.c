// Prints every resource limit, one "RESOURCE CUR MAX" line each
// (getrlimit(2); "inf" for RLIM_INFINITY).
#include <stdio.h>
#include <sys/resource.h>

static void Print(rlim_t v) {
  if (v == RLIM_INFINITY) {
    printf(" inf");
  } else {
    printf(" %llu", (unsigned long long)v);
  }
}

int main(void) {
  for (int r = 0; r < RLIM_NLIMITS; ++r) {
    struct rlimit l;
    if (getrlimit(r, &l) != 0) {
      printf("%d error\n", r);
      continue;
    }
    printf("%d", r);
    Print(l.rlim_cur);
    Print(l.rlim_max);
    printf("\n");
  }
  return 0;
}
