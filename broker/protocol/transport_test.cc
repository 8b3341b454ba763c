#include "broker/protocol/transport.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/protocol/codec.h"
#include "gtest/gtest.h"

namespace sandbox::broker {
namespace {

class Transport : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    a_.reset(sv[0]);
    b_.reset(sv[1]);
  }
  UniqueFd a_, b_;
};

TEST_F(Transport, MessageWithDescriptor) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  Message m;
  m.type = Type::kAccepted;
  m.guest_port = 80;
  ASSERT_EQ(SendMessage(a_.get(), m, p[1]), 0);
  close(p[1]);
  Received r;
  ASSERT_EQ(RecvMessage(b_.get(), &r), 0);
  EXPECT_EQ(r.message.type, Type::kAccepted);
  ASSERT_TRUE(r.fd.valid());
  EXPECT_EQ(fcntl(r.fd.get(), F_GETFD), FD_CLOEXEC);
  ASSERT_EQ(write(r.fd.get(), "x", 1), 1);
  char c;
  EXPECT_EQ(read(p[0], &c, 1), 1);
  close(p[0]);
}

TEST_F(Transport, DescriptorCountMustMatchType) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  // A request with a descriptor: refused, the descriptor closed.
  Message q;
  q.type = Type::kResolve;
  q.id = 1;
  q.name = "a";
  ASSERT_EQ(SendMessage(a_.get(), q, p[1]), 0);
  close(p[1]);
  Received r;
  EXPECT_EQ(RecvMessage(b_.get(), &r), EBADMSG);
  char c;
  EXPECT_EQ(read(p[0], &c, 1), 0);  // every write end is closed
  close(p[0]);
  // An accepted connection without its descriptor.
  Message m;
  m.type = Type::kAccepted;
  m.guest_port = 80;
  ASSERT_EQ(SendMessage(a_.get(), m), 0);
  EXPECT_EQ(RecvMessage(b_.get(), &r), EBADMSG);
  // The connection goes on.
  ASSERT_EQ(SendMessage(a_.get(), q), 0);
  EXPECT_EQ(RecvMessage(b_.get(), &r), 0);
}

TEST_F(Transport, OversizeAndGarbageRecords) {
  std::string big(kMaxRecord + 100, 'x');
  ASSERT_EQ(send(a_.get(), big.data(), big.size(), 0),
            static_cast<ssize_t>(big.size()));
  Received r;
  EXPECT_EQ(RecvMessage(b_.get(), &r), EBADMSG);
  EXPECT_EQ(SendRecord(a_.get(), big), EMSGSIZE);
  ASSERT_EQ(SendRecord(a_.get(), "garbage"), 0);
  EXPECT_EQ(RecvMessage(b_.get(), &r), EBADMSG);
  EXPECT_EQ(RecvMessage(b_.get(), &r, MSG_DONTWAIT), EAGAIN);
}

TEST_F(Transport, EndOfConnection) {
  a_.reset();
  Received r;
  EXPECT_EQ(RecvMessage(b_.get(), &r), ECONNRESET);
  Message q;
  q.type = Type::kResolve;
  q.id = 1;
  EXPECT_EQ(SendMessage(b_.get(), q), EPIPE);
}

}  // namespace
}  // namespace sandbox::broker
