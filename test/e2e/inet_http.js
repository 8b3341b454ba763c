// A node http server and client over loopback (127.0.0.1, then ::1), for
// test/e2e's inet_apps_test: it prints only what does not change from run to
// run, so that the sandbox's output can be compared with the native run's.
// By hand: node test/e2e/inet_http.js
'use strict';
const http = require('http');
const crypto = require('crypto');
const net = require('net');
setTimeout(() => { console.log('timed out'); process.exit(2); }, 60000).unref();

const sha = (b) => crypto.createHash('sha256').update(b).digest('hex').slice(0, 16);

function request(opts, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(opts, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({status: res.statusCode, type: res.headers['content-type'], body: Buffer.concat(chunks)}));
    });
    req.setTimeout(10000, () => req.destroy(new Error('request timeout')));
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

async function one(host) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url === '/big') {
        res.writeHead(200, {'Content-Type': 'application/octet-stream'});
        const part = Buffer.alloc(65536, 7);
        for (let i = 0; i < 16; i++) res.write(part);  // 1 MiB, chunked
        res.end();
      } else if (req.url === '/peer') {
        res.writeHead(200, {'Content-Type': 'text/plain'});
        res.end(req.socket.remoteFamily + ' ' + req.socket.remoteAddress);
      } else if (req.method === 'POST') {
        res.writeHead(201, {'Content-Type': 'text/plain'});
        res.end(body.length + ' ' + sha(body));
      } else {
        res.writeHead(404, {'Content-Type': 'text/plain'});
        res.end('no ' + req.url);
      }
    });
  });
  await new Promise((resolve) => server.listen(0, host, resolve));
  const port = server.address().port;
  console.log(host, 'listening family', server.address().family);
  const agent = new http.Agent({keepAlive: true, maxSockets: 4});
  const base = {host, port, agent};
  let r = await request({...base, path: '/peer'});
  console.log(host, 'peer', r.status, r.body.toString());
  r = await request({...base, path: '/big'});
  console.log(host, 'big', r.status, r.type, r.body.length, sha(r.body));
  const data = Buffer.alloc(300000, 'p');
  r = await request({...base, path: '/post', method: 'POST', headers: {'Content-Length': data.length}}, data);
  console.log(host, 'post', r.status, r.body.toString(), 'want', data.length, sha(data));
  r = await request({...base, path: '/missing'});
  console.log(host, 'missing', r.status, r.body.toString());
  const many = await Promise.all([...Array(12).keys()].map((i) => request({...base, path: '/m' + i})));
  console.log(host, 'concurrent', many.map((x) => x.status + ' ' + x.body.toString()).join(', '));
  agent.destroy();
  await new Promise((resolve) => server.close(resolve));
  // Nobody listens there now.
  await new Promise((resolve) => {
    const s = net.connect({host, port});
    s.on('connect', () => { console.log(host, 'after close: connected'); s.destroy(); resolve(); });
    s.on('error', (e) => { console.log(host, 'after close', e.code); resolve(); });
  });
}

// listen(0) with no host, as most servers are started: node binds :: with
// IPV6_V6ONLY off, and a v4 client is seen as ::ffff:127.0.0.1.
async function dualStack() {
  const server = http.createServer((req, res) => {
    res.end(req.socket.remoteAddress + ' ' + req.socket.localAddress);
  });
  await new Promise((resolve) => server.listen(0, resolve));
  const port = server.address().port;
  console.log('default listen', server.address().address, server.address().family);
  for (const host of ['127.0.0.1', '::1']) {
    const r = await request({host, port, path: '/', agent: false});
    console.log('default listen, client', host, r.status, r.body.toString());
  }
  await new Promise((resolve) => server.close(resolve));
}

(async () => {
  await one('127.0.0.1');
  await one('::1');
  await dualStack();
})().catch((e) => { console.log('error', e.message); process.exit(1); });
