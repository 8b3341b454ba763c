// grpc_probe: a minimal control-API server and client, used to record the
// host syscalls gRPC needs (tools/grpc-syscalls.sh). The Sentry's seccomp
// allowlist must fit them if the Sentry serves gRPC itself.
//
//   grpc_probe server SOCKET N   serve N State calls, then exit
//   grpc_probe client SOCKET N   make N State calls
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "runsc-compat/control/control.grpc.pb.h"

namespace sandbox::control {
namespace {

class ProbeSandbox final : public Sandbox::Service {
 public:
  explicit ProbeSandbox(int n) : remaining_(n) {}
  grpc::Status State(grpc::ServerContext*, const StateRequest*,
                     StateResponse* resp) override {
    resp->set_status(StateResponse::RUNNING);
    resp->set_pid(1);
    remaining_.fetch_sub(1);
    return grpc::Status::OK;
  }
  bool done() const { return remaining_.load() <= 0; }

 private:
  std::atomic<int> remaining_;
};

int Server(const std::string& addr, int n) {
  ProbeSandbox service(n);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    fprintf(stderr, "grpc_probe: cannot listen on %s\n", addr.c_str());
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  while (!service.done()) {
    gpr_sleep_until(gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                 gpr_time_from_millis(10, GPR_TIMESPAN)));
  }
  server->Shutdown();
  return 0;
}

int Client(const std::string& addr, int n) {
  auto stub = Sandbox::NewStub(
      grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
  for (int i = 0; i < n; ++i) {
    StateRequest req;
    req.mutable_container()->set_container_id("probe");
    StateResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub->State(&ctx, req, &resp);
    if (!s.ok()) {
      fprintf(stderr, "grpc_probe: call %d: %s\n", i,
              s.error_message().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace sandbox::control

int main(int argc, char** argv) {
  int n = 0;
  if (argc != 4 || !absl::SimpleAtoi(argv[3], &n) || n <= 0) {
    fprintf(stderr, "usage: grpc_probe server|client SOCKET N\n");
    return 2;
  }
  const std::string addr = absl::StrCat("unix:", argv[2]);
  std::string mode = argv[1];
  if (mode == "server") return sandbox::control::Server(addr, n);
  if (mode == "client") return sandbox::control::Client(addr, n);
  fprintf(stderr, "grpc_probe: unknown mode %s\n", argv[1]);
  return 2;
}
