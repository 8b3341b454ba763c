/* A tiny program the loader tests load (never run by them). */
#include <stdio.h>

int main(int argc, char** argv) {
  printf("hello from %s (%d args)\n", argv[0], argc);
  return 0;
}
