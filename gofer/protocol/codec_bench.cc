// Gofer round trips and the codec's share of them: ns per encode + decode
// of the request and reply payloads of a Stat, a 3-name Walk and a
// 100-entry GetdentsPlus, and ns per GoferClient::Call of a Stat and of a
// 2-name WalkStat answered by an in-process server on a socketpair serving
// /usr (the mean of the fastest batch, robust to a loaded machine).
//
//   bazel run -c opt //gofer/protocol:codec_bench -- [ITERS [ONLY]]
//
// ONLY (stat, walk, getdents, rpc) runs that figure alone.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <functional>
#include <string>
#include <thread>

#include "gofer/protocol/client.h"
#include "gofer/protocol/codec.h"
#include "gofer/server/server.h"

namespace gofer {
namespace {

double NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// Mean ns of one req + resp encode and decode, over the fastest batch.
template <typename Req, typename Resp>
double Best(long iters, const Req& req, const Resp& resp) {
  double best = 1e30;
  for (long i = 0; i < iters; i += 1000) {
    double t0 = NowNs();
    for (int j = 0; j < 1000; ++j) {
      Req rq;
      Resp rs;
      if (!Decode(EncodeToString(req), &rq) ||
          !Decode(EncodeToString(resp), &rs)) {
        fprintf(stderr, "decode failed\n");
        exit(1);
      }
    }
    best = std::min(best, (NowNs() - t0) / 1000);
  }
  return best;
}

// Mean ns of one call over the fastest batch of 1000.
double BestCall(long iters, const std::function<int()>& call) {
  double best = 1e30;
  for (long i = 0; i < iters; i += 1000) {
    double t0 = NowNs();
    for (int j = 0; j < 1000; ++j) {
      if (call() != 0) {
        fprintf(stderr, "call failed\n");
        exit(1);
      }
    }
    best = std::min(best, (NowNs() - t0) / 1000);
  }
  return best;
}

// Stat and WalkStat round trips against a server thread serving /usr.
void Rpcs(long iters) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
  int root_fd = open("/usr", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) abort();
  std::thread server([fd = sv[1], root_fd] {
    ServeConnection(UniqueFd(fd), UniqueFd(root_fd), {});
  });
  {
    GoferClient c{UniqueFd(sv[0])};
    AttachResp root;
    if (c.Call(AttachReq{}, &root) != 0) abort();
    printf("rpc_stat      %8.1f ns\n", BestCall(iters, [&] {
             StatResp r;
             return c.Call(StatReq{root.root.handle}, &r);
           }));
    printf("rpc_walkstat  %8.1f ns\n", BestCall(iters, [&] {
             WalkStatResp r;
             return c.Call(WalkStatReq{root.root.handle, {"lib", "os-release"}},
                           &r);
           }));
  }  // Closing the client ends the server.
  server.join();
}

Inode SampleInode(Handle h) {
  Inode i;
  i.handle = h;
  i.stat.ino = h;
  i.stat.mode = 0100644;
  i.stat.size = 4096;
  i.stat.mtime = {1700000000, 5};
  return i;
}

int Main(int argc, char** argv) {
  long iters = argc > 1 ? atol(argv[1]) : 200000;
  StatResp sr{SampleInode(7).stat};
  WalkReq wq{1, {"usr", "lib", "libc.so.6"}};
  WalkResp wr;
  wr.inodes = {SampleInode(2), SampleInode(3), SampleInode(4)};
  GetdentsPlusReq gq{1, 0, 100};
  GetdentsPlusResp gr;
  for (int i = 0; i < 100; ++i) {
    gr.dirents.push_back({static_cast<uint64_t>(i),
                          static_cast<uint64_t>(i + 1), 8,
                          "file" + std::to_string(i), 1,
                          SampleInode(static_cast<Handle>(i + 10))});
  }
  std::string only = argc > 2 ? argv[2] : "";
  if (only.empty() || only == "stat") {
    printf("stat          %8.1f ns\n", Best(iters, StatReq{7}, sr));
  }
  if (only.empty() || only == "walk") {
    printf("walk3         %8.1f ns\n", Best(iters, wq, wr));
  }
  if (only.empty() || only == "getdents") {
    printf("getdents+100  %8.1f ns\n", Best(iters / 20, gq, gr));
  }
  if (only.empty() || only == "rpc") Rpcs(iters / 4);
  return 0;
}

}  // namespace
}  // namespace gofer

int main(int argc, char** argv) { return gofer::Main(argc, argv); }
