# Internet sockets over loopback as programs use them, for test/e2e's
# inet_python_test: each section prints only what does not change from run
# to run (no ports, dates or timings), so that the sandbox's output can be
# compared with the native run's byte for byte. Every wait is bounded (and
# an alarm ends the run after 60 s), so a missing wake-up shows as a
# difference, not a hang. Only loopback addresses: 127.0.0.1 and ::1.
#
# By hand: /usr/bin/python3 test/e2e/inet_programs.py [SECTION...]
import sys, os, signal, socket, threading, hashlib, subprocess, time
signal.alarm(60)  # Every section is bounded: a hang ends the run.

def sha(b):
    return hashlib.sha256(b).hexdigest()[:16]

def url_host(host):
    return '[%s]' % host if ':' in host else host

def free_port(host):
    # A port nobody listens on now (for a server started as a subprocess).
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]

def wait_listening(host, port, proc):
    # Bounded: 10 s of 20 ms connect attempts.
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    for _ in range(500):
        if proc.poll() is not None:
            raise SystemExit('server exited %s' % proc.returncode)
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.02)
    raise SystemExit('server not listening after 10 s')

def http_server(host):
    import http.server, urllib.request, urllib.error
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'  # Keep-alive: several requests a connection.
        def log_message(self, *args):
            pass
        def reply(self, code, body, ctype='text/plain'):
            self.send_response(code)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_GET(self):
            if self.path == '/big':
                self.reply(200, bytes(range(256)) * 4096, 'application/octet-stream')
            elif self.path == '/peer':
                # The client's address family and host, as the server sees it.
                peer = self.connection.getpeername()
                self.reply(200, ('%s %s' % (self.connection.family.name, peer[0])).encode())
            elif self.path == '/missing':
                self.send_error(404, 'nothing here')
            else:
                self.reply(200, ('path ' + self.path).encode())
        def do_POST(self):
            data = self.rfile.read(int(self.headers['Content-Length']))
            self.reply(200, ('%d %s' % (len(data), sha(data))).encode())
    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ':' in host else socket.AF_INET
        daemon_threads = True
    srv = Server((host, 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    base = 'http://%s:%d' % (url_host(host), srv.server_address[1])
    with urllib.request.urlopen(base + '/hello', timeout=10) as r:
        print('GET /hello', r.status, r.headers['Content-Type'], r.read())
    with urllib.request.urlopen(base + '/peer', timeout=10) as r:
        print('GET /peer', r.status, r.read())
    with urllib.request.urlopen(base + '/big', timeout=10) as r:
        body = r.read()
        print('GET /big', r.status, len(body), sha(body))
    data = b'posted' * 50000
    req = urllib.request.Request(base + '/post', data=data, method='POST')
    with urllib.request.urlopen(req, timeout=10) as r:
        print('POST', r.status, r.read(), 'want', len(data), sha(data))
    try:
        urllib.request.urlopen(base + '/missing', timeout=10)
    except urllib.error.HTTPError as e:
        print('GET /missing', e.code, e.reason)
    # Concurrent clients (the threading server's threads).
    results = [None] * 8
    def fetch(i):
        with urllib.request.urlopen('%s/c%d' % (base, i), timeout=10) as r:
            results[i] = r.read()
    ts = [threading.Thread(target=fetch, args=(i,)) for i in range(8)]
    for x in ts:
        x.start()
    for x in ts:
        x.join(20)
    print('concurrent', results)
    srv.shutdown()
    srv.server_close()
    t.join(10)
    # The port is free again: nobody listens there.
    fam = Server.address_family
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        print('after close connect', os.strerror(s.connect_ex((host, srv.server_address[1]))))

def http_server_module(host):
    # `python3 -m http.server` itself, serving a directory, in a subprocess.
    import tempfile, urllib.request, urllib.error, shutil
    d = tempfile.mkdtemp()
    with open(os.path.join(d, 'a.txt'), 'w') as f:
        f.write('file a\n')
    os.mkdir(os.path.join(d, 'sub'))
    with open(os.path.join(d, 'sub', 'b.bin'), 'wb') as f:
        f.write(bytes(range(256)) * 1000)
    port = free_port(host)
    proc = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', host,
                             '--directory', d, str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(host, port, proc)
        base = 'http://%s:%d' % (url_host(host), port)
        with urllib.request.urlopen(base + '/', timeout=10) as r:
            listing = r.read().decode()
            print('listing', r.status, [n for n in ('a.txt', 'sub/') if n in listing])
        with urllib.request.urlopen(base + '/a.txt', timeout=10) as r:
            print('a.txt', r.status, r.headers['Content-Type'], r.read())
        with urllib.request.urlopen(base + '/sub/b.bin', timeout=10) as r:
            b = r.read()
            print('b.bin', r.status, len(b), sha(b))
        try:
            urllib.request.urlopen(base + '/nope', timeout=10)
        except urllib.error.HTTPError as e:
            print('nope', e.code)
    finally:
        proc.terminate()
        print('server exit', proc.wait(10))
        shutil.rmtree(d)

def http_v4():
    http_server('127.0.0.1')
    http_server_module('127.0.0.1')

def http_v6():
    http_server('::1')
    http_server_module('::1')

def asyncio_tcp():
    import asyncio
    async def handle(r, w):
        peer = w.get_extra_info('peername')
        first = await r.readline()
        if first == b'count\n':
            # Half-close: read to the client's EOF, then answer and close.
            n = len(await r.read())
            w.write(b'%d\n' % n)
            await w.drain()
        else:
            line = first
            while line:
                w.write(line.upper())
                await w.drain()
                line = await r.readline()
        w.close()
        await w.wait_closed()
    async def one(host):
        server = await asyncio.start_server(handle, host, 0, limit=1 << 20)
        port = server.sockets[0].getsockname()[1]
        async with server:
            r, w = await asyncio.open_connection(host, port, limit=1 << 20)
            print(host, 'peer family', w.get_extra_info('socket').family.name)
            for msg in (b'hello\n', b'tcp loopback\n', b'x' * 200000 + b'\n'):
                w.write(msg)
                await w.drain()
                got = await asyncio.wait_for(r.readline(), 10)
                print(host, 'echo', len(got), got[:16])
            w.close()
            await w.wait_closed()
            # Half-close.
            r, w = await asyncio.open_connection(host, port)
            w.write(b'count\n' + b'y' * 300000)
            w.write_eof()
            print(host, 'count', await asyncio.wait_for(r.read(), 10))
            w.close()
            await w.wait_closed()
            # Concurrent clients.
            async def client(i):
                r, w = await asyncio.open_connection(host, port)
                w.write(b'client %d\n' % i)
                got = await asyncio.wait_for(r.readline(), 10)
                w.close()
                await w.wait_closed()
                return got
            print(host, 'gathered', await asyncio.gather(*(client(i) for i in range(10))))
            server.close()
            await server.wait_closed()
        try:
            await asyncio.open_connection(host, port)
        except OSError as e:
            print(host, 'after close', type(e).__name__, e.errno == 111)
    async def main():
        await one('127.0.0.1')
        await one('::1')
    asyncio.run(main())

def asyncio_udp():
    import asyncio
    class Echo(asyncio.DatagramProtocol):
        def connection_made(self, t):
            self.t = t
        def datagram_received(self, data, addr):
            self.t.sendto(data.upper(), addr)
    class Client(asyncio.DatagramProtocol):
        def __init__(self):
            self.q = asyncio.Queue()
        def datagram_received(self, data, addr):
            self.q.put_nowait(data)
        def error_received(self, exc):
            self.q.put_nowait(exc)
    async def one(host):
        loop = asyncio.get_running_loop()
        st, _ = await loop.create_datagram_endpoint(Echo, local_addr=(host, 0))
        addr = st.get_extra_info('sockname')[:2]
        ct, cp = await loop.create_datagram_endpoint(Client, remote_addr=addr)
        for msg in (b'one', b'two', b'z' * 60000):
            ct.sendto(msg)
            got = await asyncio.wait_for(cp.q.get(), 10)
            print(host, 'udp echo', len(got), got[:8])
        ct.close()
        # Unconnected sender: replies come back to its own address.
        ut, up = await loop.create_datagram_endpoint(Client, local_addr=(host, 0))
        for i in range(5):
            ut.sendto(b'dgram %d' % i, addr)
        got = [await asyncio.wait_for(up.q.get(), 10) for _ in range(5)]
        print(host, 'unconnected', sorted(got))
        ut.close()
        st.close()
    async def main():
        await one('127.0.0.1')
        await one('::1')
    asyncio.run(main())

def socketserver_threaded():
    import socketserver
    class Stream(socketserver.StreamRequestHandler):
        def handle(self):
            for line in self.rfile:
                self.wfile.write(line[::-1][1:] + b'\n')
    class Dgram(socketserver.BaseRequestHandler):
        def handle(self):
            data, sock = self.request
            sock.sendto(data[::-1], self.client_address)
    class TCP6(socketserver.ThreadingTCPServer):
        address_family = socket.AF_INET6
    for cls, host in ((socketserver.ThreadingTCPServer, '127.0.0.1'), (TCP6, '::1')):
        cls.daemon_threads = True
        cls.allow_reuse_address = True
        with cls((host, 0), Stream) as srv:
            t = threading.Thread(target=srv.serve_forever, daemon=True)
            t.start()
            out = {}
            def client(i):
                with socket.create_connection(srv.server_address[:2], timeout=10) as s:
                    f = s.makefile('rwb')
                    got = []
                    for j in range(20):
                        f.write(b'%d-%d\n' % (i, j))
                        f.flush()
                        got.append(f.readline())
                    out[i] = got[-1]
            ts = [threading.Thread(target=client, args=(i,)) for i in range(8)]
            for x in ts:
                x.start()
            for x in ts:
                x.join(20)
            print(host, 'tcp', sorted(out.items()))
            srv.shutdown()
            t.join(10)
    with socketserver.ThreadingUDPServer(('127.0.0.1', 0), Dgram) as srv:
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(10)
            got = []
            for i in range(5):
                s.sendto(b'abc%d' % i, srv.server_address)
                got.append(s.recvfrom(100)[0])
            print('udp', got)
        srv.shutdown()
        t.join(10)

def tcp_details():
    # The TCP behaviours servers lean on, each as Linux shows it.
    # sendfile(2) from a file to a TCP socket (socket.sendfile).
    import tempfile
    d = tempfile.mkdtemp()
    fn = os.path.join(d, 'f')
    with open(fn, 'wb') as f:
        f.write(bytes(range(256)) * 40000)
    l = socket.socket()
    l.bind(('127.0.0.1', 0))
    l.listen()
    a = socket.create_connection(l.getsockname(), timeout=10)
    b, _ = l.accept()
    got = []
    def reader():
        n = 0
        b.settimeout(10)
        while True:
            x = b.recv(1 << 16)
            if not x:
                break
            n += len(x)
        got.append(n)
    t = threading.Thread(target=reader)
    t.start()
    with open(fn, 'rb') as f:
        print('sendfile sent', a.sendfile(f))
    a.close()
    t.join(20)
    print('sendfile received', got)
    os.unlink(fn)
    os.rmdir(d)
    b.close()
    l.close()
    # Closing with unread data sends a reset: the peer's next send fails.
    l = socket.socket()
    l.bind(('127.0.0.1', 0))
    l.listen()
    a = socket.create_connection(l.getsockname(), timeout=10)
    b, _ = l.accept()
    a.sendall(b'never read')
    time.sleep(0.1)
    b.close()
    time.sleep(0.1)
    try:
        a.sendall(b'x')
        print('after reset: send ok, recv', a.recv(10))
    except OSError as e:
        print('after reset:', os.strerror(e.errno))
    a.close()
    l.close()
    # A dual-stack listener on :: takes a v4 client as ::ffff:127.0.0.1.
    l = socket.socket(socket.AF_INET6)
    l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    l.bind(('::', 0))
    l.listen()
    port = l.getsockname()[1]
    for host in ('127.0.0.1', '::1'):
        c = socket.create_connection((host, port), timeout=10)
        s, peer = l.accept()
        print('dual stack: client', host, 'seen as', peer[0], 'server end',
              s.getsockname()[0])
        s.close()
        c.close()
    l.close()
    # SO_REUSEPORT: connections spread over both listeners.
    ls = []
    for i in range(2):
        x = socket.socket()
        x.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        x.bind(('127.0.0.1', 0 if i == 0 else ls[0].getsockname()[1]))
        x.listen(64)
        ls.append(x)
    cs = [socket.create_connection(ls[0].getsockname(), timeout=10) for _ in range(40)]
    time.sleep(0.2)
    counts = []
    for x in ls:
        x.setblocking(False)
        n = 0
        try:
            while n < 100:
                x.accept()[0].close()
                n += 1
        except BlockingIOError:
            pass
        counts.append(n)
    print('SO_REUSEPORT: accepted', sum(counts), 'every listener took some', all(counts))
    for x in cs + ls:
        x.close()

def tcp_time_wait():
    # The server closes first: its port stays in TIME_WAIT, so a new
    # listener there needs SO_REUSEADDR (a restarted server's case; Linux's
    # inet_csk_bind_conflict: both sockets must have it).
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(('127.0.0.1', 0))
    l.listen()
    port = l.getsockname()[1]
    c = socket.create_connection(('127.0.0.1', port), timeout=10)
    s, _ = l.accept()
    s.close()  # Active close: s's 4-tuple goes to TIME_WAIT after c closes.
    time.sleep(0.1)
    c.close()
    l.close()
    time.sleep(0.1)
    for reuse in (0, 1):
        x = socket.socket()
        x.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, reuse)
        try:
            x.bind(('127.0.0.1', port))
            print('bind over TIME_WAIT, SO_REUSEADDR=%d: ok' % reuse)
        except OSError as e:
            print('bind over TIME_WAIT, SO_REUSEADDR=%d:' % reuse, os.strerror(e.errno))
        x.close()

def curl():
    import tempfile, shutil
    if not os.access('/usr/bin/curl', os.X_OK):
        print('no curl')
        return
    d = tempfile.mkdtemp()
    with open(os.path.join(d, 'page.html'), 'w') as f:
        f.write('<p>hello from python</p>\n')
    with open(os.path.join(d, 'data.bin'), 'wb') as f:
        f.write(bytes(range(256)) * 2000)
    def run(*args):
        p = subprocess.run(['/usr/bin/curl', '-sS', '--max-time', '20'] + list(args),
                           capture_output=True, timeout=30)
        return p.returncode, p.stdout
    for host in ('127.0.0.1', '::1'):
        port = free_port(host)
        proc = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', host,
                                 '--directory', d, str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening(host, port, proc)
            base = 'http://%s:%d' % (url_host(host), port)
            print(host, 'page', run('-g', base + '/page.html'))
            rc, out = run('-g', base + '/data.bin')
            print(host, 'data', rc, len(out), sha(out))
            rc, out = run('-g', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', base + '/gone')
            print(host, 'gone', rc, out)
            rc, out = run('-g', '-I', base + '/page.html')
            keep = [l for l in out.split(b'\r\n') if l.split(b':')[0] in
                    (b'HTTP/1.0 200 OK', b'Content-type', b'Content-Length')]
            print(host, 'head', rc, keep)
            # Several URLs on one curl (one connection each: HTTP/1.0 server).
            rc, out = run('-g', base + '/page.html', base + '/page.html', base + '/page.html')
            print(host, 'three', rc, out.count(b'hello'))
        finally:
            proc.terminate()
            print(host, 'server exit', proc.wait(10))
        # Nobody listens there now: curl says it could not connect (exit 7).
        print(host, 'refused', run('-g', 'http://%s:%d/' % (url_host(host), port))[0])
    shutil.rmtree(d)

SECTIONS = {f.__name__: f for f in (
    http_v4, http_v6, asyncio_tcp, asyncio_udp, socketserver_threaded,
    tcp_details, tcp_time_wait, curl)}

if __name__ == '__main__':
    for name in sys.argv[1:] or SECTIONS:
        print('==', name)
        SECTIONS[name]()
        sys.stdout.flush()
