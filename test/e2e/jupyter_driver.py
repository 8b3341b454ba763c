"""Drives a Jupyter kernel as a notebook server would (jupyter_test.cc).

usage: jupyter_driver.py [--tcp] DIR [RUNSC]

Starts Debian's ipykernel from a kernelspec whose argv is the plain
`python3 -m ipykernel_launcher -f {connection_file}`, or, with RUNSC, the
same under `RUNSC do --bind=DIR:uds` (DIR at the same path in the sandbox,
host Unix sockets allowed there). The connection file uses the "ipc"
transport with a relative name, so the kernel (its working directory is DIR
in both cases) binds its five ZeroMQ sockets in DIR and the client here
connects to them there.

With --tcp, the connection file uses the "tcp" transport on 127.0.0.1 with
five ports chosen here, and RUNSC runs the kernel under `RUNSC do
--bind=DIR --publish=127.0.0.1:P:P` for each: the kernel listens on the
sandbox's own loopback, the client here connects to the host's 127.0.0.1:P
and the broker forwards each connection in, as a notebook server on the
host reaches a kernel in a container with published ports. A BlockingKernelClient then runs cells: a print, an
exception, a numpy computation, a file written and read back, input()
answered on the stdin channel; then a clean shutdown.

Prints a transcript (compared between the two runs) and, on stderr, the
timings: "ready S" (start to kernel_info reply) and "first S" (start to the
first cell's output).
"""
import json
import os
import socket
import sys
import time

from jupyter_client.manager import KernelManager

# Seconds to wait for the kernel and for each cell (JD_TIMEOUT overrides).
TIMEOUT = int(os.environ.get("JD_TIMEOUT", "120"))


PORT_NAMES = ('shell_port', 'iopub_port', 'stdin_port', 'control_port',
              'hb_port')


def free_ports(n):
    """n distinct ports of the host's 127.0.0.1 that nothing listens on now."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def main():
    args = sys.argv[1:]
    tcp = '--tcp' in args
    args = [a for a in args if a != '--tcp']
    d, runsc = args[0], (args[1] if len(args) > 1 else None)
    os.chdir(d)
    spec_dir = os.path.join(d, 'kernels', 'probe')
    os.makedirs(spec_dir)
    argv = ['/usr/bin/python3', '-m', 'ipykernel_launcher', '-f',
            '{connection_file}']
    ports = dict(zip(PORT_NAMES, free_ports(len(PORT_NAMES)))) if tcp else {}
    if runsc and tcp:
        argv = ([runsc, 'do', '--bind=%s' % d] +
                ['--publish=127.0.0.1:%d:%d' % (p, p) for p in ports.values()]
                + ['--'] + argv)
    elif runsc:
        argv = [runsc, 'do', '--bind=%s:uds' % d, '--'] + argv
    with open(os.path.join(spec_dir, 'kernel.json'), 'w') as f:
        json.dump({'argv': argv, 'display_name': 'probe',
                   'language': 'python'}, f)
    os.environ['JUPYTER_PATH'] = d
    os.environ['JUPYTER_RUNTIME_DIR'] = d
    # No history database or IPython directory of the host user's.
    os.environ['IPYTHONDIR'] = os.path.join(d, 'ipython')

    # In DIR (the client's temporary file would be in the host's /tmp, which
    # the sandbox does not see); "ip" relative, for sun_path's 108 bytes.
    if tcp:
        km = KernelManager(kernel_name='probe', transport='tcp',
                           ip='127.0.0.1',
                           connection_file=os.path.join(d, 'connection.json'),
                           # Else jupyter_client's local provisioner picks
                           # its own ports over these.
                           cache_ports=False, **ports)
    else:
        km = KernelManager(kernel_name='probe', transport='ipc',
                           ip='kernel-ipc',
                           connection_file=os.path.join(d, 'connection.json'))
    start = time.monotonic()
    km.start_kernel(cwd=d)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    ready = time.monotonic() - start
    first = None

    def run(code, stdin_reply=None):
        nonlocal first
        out = []

        def on_output(msg):
            nonlocal first
            t, c = msg['msg_type'], msg['content']
            if t == 'stream':
                out.append('%s: %r' % (c['name'], c['text']))
            elif t == 'execute_result':
                out.append('result: %r' % c['data'].get('text/plain'))
            elif t == 'error':
                tb = '\n'.join(c['traceback'])
                out.append('error: %s %s traceback-mentions-it=%s' %
                           (c['ename'], c['evalue'], c['ename'] in tb))
            else:
                return
            if first is None:
                first = time.monotonic() - start

        def on_stdin(msg):
            out.append('input_request: %r' % msg['content']['prompt'])
            kc.input(stdin_reply)

        # stop_on_error=False: an error does not abort the cells that
        # follow (ipykernel aborts what arrives while it flushes its queue
        # after an error, a race with the next request; each cell here
        # stands alone).
        reply = kc.execute_interactive(
            code, timeout=TIMEOUT, output_hook=on_output,
            stdin_hook=on_stdin, allow_stdin=stdin_reply is not None,
            stop_on_error=False)
        out.append('status: %s' % reply['content']['status'])
        print('--- %s' % code.splitlines()[0])
        for line in out:
            print(line)
        sys.stdout.flush()

    run("print('hello from the kernel')")
    run('1/0')
    run('import numpy as np\n'
        'a = np.arange(12).reshape(3, 4)\n'
        'print(a.sum(axis=0), a.T.dot(a).trace())')
    run("with open('cell-file.txt', 'w') as f: f.write('written in a cell')\n"
        "print(open('cell-file.txt').read())")
    run("name = input('who? ')\nprint('hello,', name)", stdin_reply='host')
    with open(os.path.join(d, 'cell-file.txt')) as f:
        print('host reads: %r' % f.read())
    km.shutdown_kernel(now=False)
    kc.stop_channels()
    print('alive after shutdown: %s' % km.is_alive())
    print('ready %.3f' % ready, file=sys.stderr)
    print('first %.3f' % (first if first is not None else -1),
          file=sys.stderr)


if __name__ == '__main__':
    main()
