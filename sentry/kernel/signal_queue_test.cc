#include "sentry/kernel/signal_queue.h"

#include <string.h>

#include "gtest/gtest.h"

namespace sandbox::kernel {
namespace {

siginfo_t Info(int sig, int value = 0) {
  siginfo_t i;
  memset(&i, 0, sizeof(i));
  i.si_signo = sig;
  i.si_code = SI_QUEUE;
  i.si_value.sival_int = value;
  return i;
}

TEST(SignalQueueTest, StandardSignalsCoalesce) {
  SignalQueue q;
  EXPECT_TRUE(q.Enqueue(Info(SIGUSR1, 1)));
  EXPECT_FALSE(q.Enqueue(Info(SIGUSR1, 2)));
  EXPECT_EQ(q.pending(), SigBit(SIGUSR1));
  auto i = q.Dequeue(0);
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->si_value.sival_int, 1);  // the first one's info
  EXPECT_FALSE(q.Dequeue(0).has_value());
  EXPECT_EQ(q.pending(), 0u);
}

TEST(SignalQueueTest, RealtimeSignalsQueueInOrder) {
  SignalQueue q;
  for (int v = 0; v < 3; ++v) EXPECT_TRUE(q.Enqueue(Info(SIGRTMIN + 1, v)));
  EXPECT_TRUE(q.Enqueue(Info(SIGRTMIN, 9)));
  // Lowest number first, then each instance in the order sent.
  EXPECT_EQ(q.Dequeue(0)->si_value.sival_int, 9);
  for (int v = 0; v < 3; ++v) {
    auto i = q.Dequeue(0);
    ASSERT_TRUE(i.has_value());
    EXPECT_EQ(i->si_signo, SIGRTMIN + 1);
    EXPECT_EQ(i->si_value.sival_int, v);
  }
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_EQ(q.size(), 0u);
}

TEST(SignalQueueTest, SynchronousFaultsFirstAndMaskRespected) {
  SignalQueue q;
  q.Enqueue(Info(SIGHUP));
  q.Enqueue(Info(SIGSEGV));
  q.Enqueue(Info(SIGINT));
  EXPECT_EQ(q.Dequeue(0)->si_signo, SIGSEGV);
  // SIGHUP blocked: SIGINT comes out, SIGHUP stays.
  EXPECT_EQ(q.Dequeue(SigBit(SIGHUP))->si_signo, SIGINT);
  EXPECT_FALSE(q.Dequeue(SigBit(SIGHUP)).has_value());
  EXPECT_EQ(q.pending(), SigBit(SIGHUP));
}

TEST(SignalQueueTest, FlushDropsEveryInstance) {
  SignalQueue q;
  q.Enqueue(Info(SIGRTMIN));
  q.Enqueue(Info(SIGRTMIN));
  q.Enqueue(Info(SIGCONT));
  q.Flush(SigBit(SIGRTMIN));
  EXPECT_EQ(q.pending(), SigBit(SIGCONT));
  EXPECT_EQ(q.size(), 1u);
}

TEST(SignalQueueTest, DefaultActions) {
  EXPECT_EQ(DefaultActionOf(SIGCHLD), DefaultAction::kIgnore);
  EXPECT_EQ(DefaultActionOf(SIGSEGV), DefaultAction::kCoreDump);
  EXPECT_EQ(DefaultActionOf(SIGTERM), DefaultAction::kTerminate);
  EXPECT_EQ(DefaultActionOf(SIGRTMIN), DefaultAction::kTerminate);
  EXPECT_EQ(DefaultActionOf(SIGTSTP), DefaultAction::kStop);
  EXPECT_EQ(DefaultActionOf(SIGCONT), DefaultAction::kContinue);
  abi::KernelSigaction dfl = {}, ign = {abi::kSigIgn, 0, 0, 0},
                       handler = {0x1000, 0, 0, 0};
  EXPECT_TRUE(ActionIgnores(SIGCHLD, dfl));
  EXPECT_TRUE(ActionIgnores(SIGCONT, dfl));
  EXPECT_FALSE(ActionIgnores(SIGTERM, dfl));
  EXPECT_TRUE(ActionIgnores(SIGTERM, ign));
  EXPECT_FALSE(ActionIgnores(SIGCHLD, handler));
}

}  // namespace
}  // namespace sandbox::kernel
