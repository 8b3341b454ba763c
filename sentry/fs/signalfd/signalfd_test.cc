#include "sentry/fs/signalfd/signalfd.h"

#include <fcntl.h>

#include <cstring>

#include "gtest/gtest.h"

namespace sandbox::fs::signalfd {
namespace {

siginfo_t Info(int sig, int code) {
  siginfo_t i;
  memset(&i, 0, sizeof(i));
  i.si_signo = sig;
  i.si_code = code;
  return i;
}

TEST(SignalFdTest, KillLayout) {
  siginfo_t i = Info(SIGUSR1, SI_USER);
  i.si_pid = 12;
  i.si_uid = 34;
  signalfd_siginfo s = ToSignalfdSiginfo(i);
  EXPECT_EQ(s.ssi_signo, uint32_t{SIGUSR1});
  EXPECT_EQ(s.ssi_code, SI_USER);
  EXPECT_EQ(s.ssi_pid, 12u);
  EXPECT_EQ(s.ssi_uid, 34u);
  EXPECT_EQ(s.ssi_ptr, 0u);
}

TEST(SignalFdTest, QueueAndTkillAreRt) {
  siginfo_t i = Info(SIGRTMIN, SI_QUEUE);
  i.si_pid = 5;
  i.si_uid = 6;
  i.si_value.sival_ptr = reinterpret_cast<void*>(0x1122334455667788);
  signalfd_siginfo s = ToSignalfdSiginfo(i);
  EXPECT_EQ(s.ssi_pid, 5u);
  EXPECT_EQ(s.ssi_uid, 6u);
  EXPECT_EQ(s.ssi_ptr, 0x1122334455667788u);
  EXPECT_EQ(static_cast<uint32_t>(s.ssi_int), 0x55667788u);
}

TEST(SignalFdTest, TimerLayout) {
  siginfo_t i = Info(SIGALRM, SI_TIMER);
  i.si_timerid = 3;
  i.si_overrun = 7;
  i.si_value.sival_int = 99;
  signalfd_siginfo s = ToSignalfdSiginfo(i);
  EXPECT_EQ(s.ssi_tid, 3u);
  EXPECT_EQ(s.ssi_overrun, 7u);
  EXPECT_EQ(s.ssi_int, 99);
  // si_timerid shares si_pid's place: no pid or uid in a timer record.
  EXPECT_EQ(s.ssi_pid, 0u);
  EXPECT_EQ(s.ssi_uid, 0u);
}

TEST(SignalFdTest, ChildLayout) {
  siginfo_t i = Info(SIGCHLD, CLD_EXITED);
  i.si_pid = 40;
  i.si_uid = 41;
  i.si_status = 3;
  i.si_utime = 5;
  i.si_stime = 6;
  signalfd_siginfo s = ToSignalfdSiginfo(i);
  EXPECT_EQ(s.ssi_pid, 40u);
  EXPECT_EQ(s.ssi_status, 3);
  EXPECT_EQ(s.ssi_utime, 5u);
  EXPECT_EQ(s.ssi_stime, 6u);
  // SIGCHLD with a code above NSIGCHLD: the kill layout.
  i.si_code = 7;
  s = ToSignalfdSiginfo(i);
  EXPECT_EQ(s.ssi_status, 0);
  EXPECT_EQ(s.ssi_pid, 40u);
}

TEST(SignalFdTest, FaultAndKernelLayouts) {
  siginfo_t i = Info(SIGSEGV, SEGV_MAPERR);
  i.si_addr = reinterpret_cast<void*>(0x1000);
  signalfd_siginfo s = ToSignalfdSiginfo(i);
  EXPECT_EQ(s.ssi_addr, 0x1000u);
  EXPECT_EQ(s.ssi_pid, 0u);
  s = ToSignalfdSiginfo(Info(SIGSEGV, SI_KERNEL));
  EXPECT_EQ(s.ssi_code, SI_KERNEL);
  EXPECT_EQ(s.ssi_addr, 0u);
}

TEST(SignalFdTest, MaskDropsKillAndStop) {
  const kernel::SigSet all = ~kernel::SigSet{0};
  SignalFd f(all, O_RDWR);
  EXPECT_EQ(f.mask(), all & ~kernel::kUnblockableSignals);
  f.SetMask(kernel::SigBit(SIGUSR1) | kernel::SigBit(SIGKILL));
  EXPECT_EQ(f.mask(), kernel::SigBit(SIGUSR1));
  EXPECT_EQ(f.FdInfo(), "sigmask:\t0000000000000200\n");
  // Outside a task thread nothing is pending for the caller.
  EXPECT_EQ(f.Readiness(vfs::kAllEvents), 0u);
}

}  // namespace
}  // namespace sandbox::fs::signalfd
