// End-to-end: what a new user of sockets runs first, through the host's
// /usr/bin/python3 in `runsc do`, printing what it prints natively (issue
// 20): an asyncio echo server and client over a path Unix socket and over
// socket.socketpair(); asyncio.run of gathered sleeps (its event loop
// starts with a socketpair); selectors; socket.send_fds/recv_fds;
// multiprocessing with a Manager() (a server process on a Unix socket);
// get_context("spawn").Pool and concurrent.futures.ProcessPoolExecutor
// (their result pipes and wake-ups); and bash, which asks getpeername(stdin)
// whether a network daemon started it (with a socket as stdin Debian's bash
// then reads ~/.bashrc), printing nothing of its own on stderr.
//
// Each case runs one section of the script natively, then sandboxed, and
// wants the same exit status, stdout and stderr. Every wait in the script
// is bounded (and an alarm ends it after 60 s), so a missing wake-up shows
// as a difference, not a hang. Needs /usr/bin/python3 and `runsc do`
// serving the host's root; skips with the reason otherwise.
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// Run as `python3 -c kScript SECTION...`.
constexpr char kScript[] = R"PY(
import sys, os, signal
signal.alarm(60)  # Every section is bounded: a hang ends the run.

def asyncio_path():
    import asyncio, tempfile
    d = tempfile.mkdtemp(dir='/tmp')  # Short enough for sun_path.
    path = os.path.join(d, 'echo.sock')
    async def handle(r, w):
        while True:
            line = await r.readline()
            if not line:
                break
            w.write(line.upper())
            await w.drain()
        w.close()
        await w.wait_closed()
    async def main():
        server = await asyncio.start_unix_server(handle, path, limit=1 << 20)
        async with server:
            r, w = await asyncio.open_unix_connection(path, limit=1 << 20)
            for msg in (b'hello\n', b'unix sockets\n', b'x' * 100000 + b'\n'):
                w.write(msg)
                await w.drain()
                got = await r.readline()
                print('echo', len(got), got[:20])
            w.close()
            await w.wait_closed()
            server.close()
            await server.wait_closed()
    asyncio.run(main())
    os.unlink(path)
    os.rmdir(d)

def asyncio_socketpair():
    import asyncio, socket
    async def main():
        a, b = socket.socketpair()
        r1, w1 = await asyncio.open_connection(sock=a)
        r2, w2 = await asyncio.open_connection(sock=b)
        w1.write(b'ping\n')
        await w1.drain()
        print('b got', await r2.readline())
        w2.write(b'pong\n')
        await w2.drain()
        print('a got', await r1.readline())
        w1.close()
        await w1.wait_closed()
        print('b at eof', await r2.read())
        w2.close()
        await w2.wait_closed()
    asyncio.run(main())

def asyncio_sleeps():
    import asyncio, time
    async def nap(i, s):
        await asyncio.sleep(s)
        return i
    async def main():
        return await asyncio.gather(*(nap(i, 0.05 * (3 - i)) for i in range(3)))
    t = time.monotonic()
    print('gathered', asyncio.run(main()))
    print('took under 2 s', time.monotonic() - t < 2)

def selectors_pair():
    import selectors, socket
    sel = selectors.DefaultSelector()
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    sel.register(b, selectors.EVENT_READ, 'b')
    print('ready before', [k.data for k, _ in sel.select(0)])
    a.send(b'data')
    print('ready after', [(k.data, m) for k, m in sel.select(1)])
    print('recv', b.recv(10))
    sel.modify(b, selectors.EVENT_READ | selectors.EVENT_WRITE, 'b')
    print('rw', [(k.data, m) for k, m in sel.select(1)])
    a.close()
    print('eof', [(k.data, m) for k, m in sel.select(1)], b.recv(10))
    sel.close()

def fd_passing():
    import socket
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    r, w = os.pipe()
    socket.send_fds(a, [b'take these'], [w, r])
    msg, fds, flags, addr = socket.recv_fds(b, 100, 4)
    print('msg', msg, 'nfds', len(fds), 'flags', flags)
    os.write(fds[0], b'through a passed fd')
    print('pipe', os.read(r, 100))
    print('same pipe', os.fstat(fds[1]).st_ino == os.fstat(r).st_ino)
    for fd in fds + [r, w]:
        os.close(fd)

def mp_manager():
    import multiprocessing as mp
    def worker(d, l, i):
        d[i] = i * i
        l.append(i)
    with mp.Manager() as m:
        d, l = m.dict(), m.list()
        ps = [mp.Process(target=worker, args=(d, l, i)) for i in range(4)]
        for p in ps:
            p.start()
        for p in ps:
            p.join(30)
        print('dict', sorted(d.items()))
        print('list', sorted(l))
        print('exit codes', [p.exitcode for p in ps])
        q = m.Queue()
        q.put('queued')
        print('queue', q.get(timeout=10))

def mp_spawn_pool():
    import multiprocessing as mp, math
    with mp.get_context('spawn').Pool(2) as pool:
        print('spawn map', pool.map(math.factorial, range(8)))
        print('spawn apply', pool.apply(pow, (2, 10)))

def process_pool():
    import concurrent.futures as cf, math
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        print('futures', list(ex.map(math.isqrt, [0, 1, 4, 99, 10000])))
        print('submit', ex.submit(pow, 3, 4).result(timeout=30))

def bash_no_error():
    import shutil, subprocess, socket, tempfile
    # bash asks getpeername(stdin) whether a network daemon started it
    # (Debian's bash then reads ~/.bashrc even for -c): with /dev/null, a
    # pipe and a socket as stdin, with and without a ~/.bashrc that says so.
    home = tempfile.mkdtemp()
    env = {'PATH': '/usr/bin:/bin', 'HOME': home}
    def run(label):
        a, b = socket.socketpair()
        for name, stdin in (('devnull', subprocess.DEVNULL),
                            ('pipe', subprocess.PIPE), ('socket', b)):
            p = subprocess.run(['/bin/bash', '-c', 'echo ok'], stdin=stdin,
                               env=env, capture_output=True, timeout=30)
            print(label, name, p.returncode, p.stdout, p.stderr)
        a.close()
        b.close()
    run('no-bashrc')
    with open(os.path.join(home, '.bashrc'), 'w') as f:
        f.write('echo read-bashrc >&2\n')
    run('bashrc')
    shutil.rmtree(home)

SECTIONS = {f.__name__: f for f in (
    asyncio_path, asyncio_socketpair, asyncio_sleeps, selectors_pair,
    fd_passing, mp_manager, mp_spawn_pool, process_pool, bash_no_error)}

if __name__ == '__main__':
    for name in sys.argv[1:] or SECTIONS:
        print('==', name)
        SECTIONS[name]()
        sys.stdout.flush()
)PY";

class PythonSocketsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PythonSocketsTest, PrintsWhatItPrintsNatively) {
  if (access(kPython, X_OK) != 0) {
    GTEST_SKIP() << "SKIP: no " << kPython << " on this host";
  }
  const std::string section = GetParam();
  Result native = RunNative({kPython, "-c", kScript, section});
  ASSERT_EQ(native.status, 0) << native.out << native.err;
  ASSERT_NE(native.out.find("== " + section), std::string::npos);
  if (!SandboxUnavailableReason().empty()) {
    GTEST_SKIP() << SandboxUnavailableReason();
  }
  if (RunscDo({"/bin/true"}).status != 0) {
    GTEST_SKIP() << "SKIP: runsc do does not serve the host's root file "
                    "system here (needed for python3)";
  }
  Child c({"do", "--", kPython, "-c", kScript, section});
  c.CloseStdin();
  Result sandboxed = c.Finish(/*timeout_ms=*/90000);
  EXPECT_EQ(sandboxed.status, native.status) << sandboxed.err;
  EXPECT_EQ(sandboxed.out, native.out) << sandboxed.err;
  EXPECT_EQ(sandboxed.err, native.err);
}

INSTANTIATE_TEST_SUITE_P(Sections, PythonSocketsTest,
                         ::testing::Values("asyncio_path", "asyncio_socketpair",
                                           "asyncio_sleeps", "selectors_pair",
                                           "fd_passing", "mp_manager",
                                           "mp_spawn_pool", "process_pool",
                                           "bash_no_error"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

}  // namespace
}  // namespace sandbox::e2e
