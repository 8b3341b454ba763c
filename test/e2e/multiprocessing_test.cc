// End-to-end: python's multiprocessing in `runsc do` as natively: a Pool
// used in a `with` block maps a function and exits, and Events are set
// across processes in both directions. Its locks, semaphores and events
// are POSIX semaphores in shared memory (/dev/shm), woken by shared
// futexes across processes (sentry/kernel/futex.h); with lost wake-ups the
// Pool's exit and Event.wait hang.
//
// Needs the host's /usr/bin/python3 and `runsc do` serving the host's root
// file system; skips with a message otherwise.
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// Every wait in it is bounded, so a lost wake-up prints a difference
// instead of hanging the test.
constexpr char kScript[] = R"(
import multiprocessing as mp

def square(x):
    return x * x

def child(go, done):
    if go.wait(30):
        done.set()

if __name__ == '__main__':
    mp.set_start_method('fork')
    with mp.Pool(2) as pool:
        print(pool.map(square, range(20)))
        print(sorted(pool.imap_unordered(square, range(5))))
    go, done = mp.Event(), mp.Event()
    p = mp.Process(target=child, args=(go, done))
    p.start()
    go.set()
    print('done set:', done.wait(30))
    p.join(30)
    print('child exit:', p.exitcode)
)";

double Seconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

TEST(MultiprocessingE2eTest, PoolInWithBlockAndEventsMatchNative) {
  if (access(kPython, X_OK) != 0) {
    GTEST_SKIP() << "SKIP: no " << kPython << " on this host";
  }
  Result native = RunNative({kPython, "-c", kScript});
  ASSERT_EQ(native.status, 0) << native.err;
  if (RunscDo({"/bin/true"}).status != 0) {
    GTEST_SKIP() << "SKIP: runsc do does not serve the host's root file "
                    "system here (needed for python3)";
  }
  const double start = Seconds();
  Child c({"do", "--", kPython, "-c", kScript});
  c.CloseStdin();
  Result sandboxed = c.Finish(/*timeout_ms=*/60000);
  const double elapsed = Seconds() - start;
  EXPECT_EQ(sandboxed.status, 0) << sandboxed.err;
  EXPECT_EQ(sandboxed.out, native.out) << sandboxed.err;
  // Natively well under a second; each lost wake-up costs a 30 s timeout.
  EXPECT_LT(elapsed, 25.0);
}

}  // namespace
}  // namespace sandbox::e2e
