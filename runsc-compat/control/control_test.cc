// The control API's generated gRPC code serves and answers over a Unix socket.

#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "runsc-compat/control/control.grpc.pb.h"

namespace sandbox::control {
namespace {

class FakeSandbox final : public Sandbox::Service {
 public:
  grpc::Status State(grpc::ServerContext*, const StateRequest* req,
                     StateResponse* resp) override {
    if (req->container().container_id() != "c1") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such container");
    }
    resp->set_status(StateResponse::RUNNING);
    resp->set_pid(1);
    resp->mutable_created()->set_seconds(42);
    return grpc::Status::OK;
  }
};

TEST(ControlTest, StateOverUnixSocket) {
  // TEST_TMPDIR is too long for sun_path (108 bytes): use a short /tmp dir.
  char dir[] = "/tmp/ctlXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string addr = absl::StrCat("unix:", dir, "/s");

  FakeSandbox service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);

  auto stub = Sandbox::NewStub(
      grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
  StateRequest req;
  req.mutable_container()->set_container_id("c1");
  StateResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->State(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.status(), StateResponse::RUNNING);
  EXPECT_EQ(resp.created().seconds(), 42);

  req.mutable_container()->set_container_id("nope");
  grpc::ClientContext ctx2;
  EXPECT_EQ(stub->State(&ctx2, req, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);

  server->Shutdown();
  unlink(absl::StrCat(dir, "/s").c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace sandbox::control
