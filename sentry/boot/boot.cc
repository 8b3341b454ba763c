#include "sentry/boot/boot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "platform/host_fds.h"
#include "platform/memory_file.h"
#include "platform/systrap/systrap.h"
#include "sentry/boot/boot_spec.h"
#include "sentry/boot/path_lookup.h"
#include "sentry/boot/root_fs.h"
#include "sentry/confine/confine.h"
#include "sentry/confine/seccomp.h"
#include "sentry/fs/gofer/filesystem.h"
#include "sentry/fs/host/host_file.h"
#include "sentry/fs/proc/format.h"
#include "sentry/fs/sys/synthetic.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/loader/exec.h"
#include "sentry/loader/loader.h"
#include "sentry/loader/vfs_reader.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/stats.h"
#include "sentry/net/families.h"
#include "sentry/net/hostinet/broker_client.h"
#include "sentry/net/hostinet/name_server.h"
#include "sentry/net/hostinet/tcp_host.h"
#include "sentry/net/hostinet/udp_host.h"
#include "sentry/net/namespace.h"
#include "sentry/net/tcp/tcp_socket.h"
#include "sentry/net/unix/unix.h"
#include "sentry/syscalls/table.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/operations.h"

namespace sandbox::boot {
namespace {

// Up to `max` bytes from the start of `path`; empty if it cannot be read.
std::string ReadFilePrefix(const char* path, size_t max) {
  std::string out;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  out.resize(max);
  size_t got = 0;
  while (got < max) {
    ssize_t n = read(fd, out.data() + got, max - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);
  return out;
}

// Guest memory the memory file may hold (sparse: only used pages cost);
// --memory (BootSpec::memory_limit) bounds what is used of it.
constexpr uint64_t kMemoryFileSize = 64ull << 30;

// Signals `runsc do` forwards; the Sentry passes them to the guest.
constexpr int kForwarded[] = {SIGINT,  SIGTERM, SIGHUP,
                              SIGQUIT, SIGUSR1, SIGUSR2};

int64_t NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

// Debug-log line with the time since boot started (start-up profile).
void Phase(int64_t start_us, const char* what) {
  kernel::LogDebug("boot: %6d us: %s", NowUs() - start_us, what);
}

void WriteStatus(BootStatus::Kind kind, int32_t value) {
  BootStatus s;
  s.kind = kind;
  s.value = value;
  // One write below PIPE_BUF is atomic; a closed pipe (the CLI is gone)
  // is ignored.
  (void)!write(kStatusFd, &s, sizeof(s));
}

int Fail(const std::string& msg) {
  kernel::LogError("%s", msg);
  WriteStatus(BootStatus::kSandboxFailed, 0);
  return 125;
}

// Installs the FDs the caller handed the sandbox as the guest's 0, 1, 2.
void InstallStdio(vfs::FdTable& fds) {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) continue;  // Closed in the caller.
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    if (own < 0) continue;
    auto f = fs::host::HostFile::Create(own);
    if (!f.ok()) {
      close(own);
      continue;
    }
    (void)fds.InstallAt(fd, std::move(f).value(), false, vfs::FdTable::kNrOpen);
  }
}

// Forwards SIGINT/SIGTERM/... (blocked in every Sentry thread) to the
// guest until the sandbox ends. Returns when `stop_fd` is readable.
void SignalLoop(kernel::Kernel* k, sigset_t set) {
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&set, &info);
    if (sig < 0) continue;
    if (sig == SIGUSR2 && info.si_pid == getpid()) return;  // Stop request.
    k->SendExternalSignal(sig);
  }
}

// The limits the CLI ran with (the Sentry inherits them across fork and
// exec), for the guest's init: read before the Sentry changes any of its
// own. A limit the host cannot report keeps Linux's default.
kernel::LimitSet CallerLimits() {
  kernel::LimitSet defaults = kernel::LimitSet::Defaults();
  std::array<abi::Rlimit64, abi::kRlimNlimits> host = defaults.limits;
  for (int r = 0; r < abi::kRlimNlimits; ++r) {
    struct rlimit64 l;
    if (getrlimit64(static_cast<__rlimit_resource_t>(r), &l) == 0) {
      host[r] = {l.rlim_cur, l.rlim_max};
    }
  }
  return kernel::LimitSet::FromCaller(host, vfs::FdTable::kNrOpen);
}

// The caller's limits are the guest's, not the Sentry's: its memory file
// (a sparse 64 GiB file) and mappings must not meet a file-size or
// address-space limit the caller set for the program, so their soft
// limits go up to the hard ones, and a write past RLIMIT_FSIZE fails
// (EFBIG) instead of killing the Sentry with SIGXFSZ.
void LiftOwnLimits() {
  for (int r : {RLIMIT_FSIZE, RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit l;
    if (getrlimit(r, &l) == 0 && l.rlim_cur != l.rlim_max) {
      l.rlim_cur = l.rlim_max;
      setrlimit(r, &l);
    }
  }
  signal(SIGXFSZ, SIG_IGN);
}

}  // namespace

std::string DescribeSyscalls() {
  return syscalls::SyscallTable::CreateLinux64()->Describe();
}

int BootMain(int argc, char** argv) {
  (void)argc;
  (void)argv;
#ifdef NDEBUG
  // Release builds only: Debian's Abseil keeps its mutex deadlock detection
  // on, which is about half the cost of a VFS path walk. Test builds
  // (fastbuild) keep it: it finds lock-order bugs (the Dentry::LookupChild
  // self-deadlock was found by it).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  const int64_t start = NowUs();
  // First: the caller's limits, before anything raises the Sentry's own.
  const kernel::LimitSet guest_limits = CallerLimits();
  LiftOwnLimits();
  // Die with the CLI. PDEATHSIG survives the execve because runsc is not
  // set-id; it was set before the exec too, closing the race with the
  // CLI's exit.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_NAME, "runsc-sentry");
  // A guest writing to a closed pipe gets EPIPE and a (Sentry-made)
  // SIGPIPE; the Sentry itself must never die of one.
  signal(SIGPIPE, SIG_IGN);
  // Every host FD the hard limit allows (no CAP_SYS_RESOURCE: no more), and
  // the budget that guest processes and threads take theirs from.
  const size_t nofile = platform::HostFdBudget::RaiseAndConfigure();

  auto spec_or = ReadBootSpecFromFd(kSpecFd);
  close(kSpecFd);
  if (!spec_or.ok()) return Fail(spec_or.status().ToString());
  BootSpec spec = std::move(spec_or).value();

  // The sandbox's diagnostics never go to the guest's stdio (log.h):
  // warnings to --log; debug lines (strace, partially supported syscalls)
  // and warnings to --debug-log, else to stderr with --strace or
  // --strace-summary, else nowhere. Both open before confinement.
  int debug_fd = spec.strace || spec.strace_summary ? 2 : -1;
  if (!spec.debug_log.empty()) {
    debug_fd = open(spec.debug_log.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (debug_fd < 0) {
      return Fail(absl::StrFormat("cannot open --debug-log %s: %s",
                                  spec.debug_log, strerror(errno)));
    }
  }
  int log_fd = -1;
  if (!spec.log.empty()) {
    log_fd =
        open(spec.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return Fail(absl::StrFormat("cannot open --log %s: %s", spec.log,
                                  strerror(errno)));
    }
  }
  kernel::SetLogSinks({.log_fd = log_fd,
                       .log_format = spec.log_json ? kernel::LogFormat::kJson
                                                   : kernel::LogFormat::kText,
                       .debug_fd = debug_fd,
                       .stderr_fd = 2,
                       .warn_unsupported = spec.warn_unsupported});
  Phase(start, "spec read");
  kernel::LogDebug("boot: %d host FDs (RLIMIT_NOFILE), %d for guest tasks",
                   nofile, platform::HostFdBudget::limit());

  // The host kernel's CPU flags, while /proc is still reachable.
  std::vector<std::string> host_cpu_flags =
      fs::proc::ParseCpuinfoFlags(ReadFilePrefix("/proc/cpuinfo", 64 * 1024));

  // Self-confinement, stage 1 (sentry/confine/confine.h): while the Sentry
  // is single-threaded, before the platform. Every FD not listed here is
  // closed.
  if (spec.unconfined) {
    kernel::LogLoudWarning("running UNCONFINED (--unconfined): debugging only");
  } else {
    std::vector<int> keep = {kStatusFd, debug_fd, log_fd, spec.root_gofer_fd};
    for (const SeedEntry& e : spec.seed) keep.push_back(e.host_fd);
    for (const GoferMount& m : spec.gofer_mounts) keep.push_back(m.fd);
    keep.push_back(spec.broker_fd);
    absl::Status s = confine::ConfineProcess({.keep_fds = keep});
    if (!s.ok()) return Fail("cannot confine the Sentry: " + s.ToString());
    Phase(start, "confined (namespaces, empty root, no capabilities)");
  }

  // Every thread made from here on (task threads, the platform's service
  // thread and the stubs it clones) starts with these blocked; only the
  // signal thread takes them.
  sigset_t fwd;
  sigemptyset(&fwd);
  for (int s : kForwarded) sigaddset(&fwd, s);
  pthread_sigmask(SIG_BLOCK, &fwd, nullptr);

  // The network broker's client (sentry/net/hostinet): its reader thread
  // starts with the forwarded signals blocked, before the seccomp filter
  // (TSYNC covers it).
  if (spec.broker_fd >= 0) {
    std::vector<net::hostinet::PublishedPort> published;
    for (const PublishedPort& p : spec.published) {
      published.push_back({p.proto == PublishedPort::kUdp ? broker::Proto::kUdp
                                                          : broker::Proto::kTcp,
                           p.guest_port});
      kernel::LogDebug("boot: published %s -> guest port %d%s", p.host,
                       p.guest_port,
                       p.proto == PublishedPort::kUdp ? "/udp" : "");
    }
    net::hostinet::BrokerClient::Start(spec.broker_fd,
                                       spec.network == NetworkMode::kHost,
                                       std::move(published));
  }

  auto mf = platform::MemoryFile::Create(kMemoryFileSize);
  if (!mf.ok()) return Fail("memory file: " + mf.status().ToString());
  // --memory: every page of the sandbox counts against it (memory_file.h).
  (*mf)->SetLimit(std::min(spec.memory_limit, kMemoryFileSize));
  auto plat_or = platform::NewSystrapPlatform(std::move(mf).value());
  if (!plat_or.ok()) {
    return Fail("systrap platform: " + plat_or.status().ToString());
  }
  std::unique_ptr<platform::Platform> plat = std::move(plat_or).value();
  Phase(start, "platform created");

  // The socket families, before the first task (the registry is read
  // without a lock afterwards: sentry/net/family.h).
  net::RegisterBuiltinFamilies();
  // Published ports: the broker's connections go to the guest's TCP
  // listeners (sentry/net/hostinet/tcp_host.h).
  net::hostinet::StartPublishing(net::NetNamespace::Root(),
                                 &net::tcp::EnqueueHostConnection);
  // Host mode: UDP datagrams off the sandbox through the broker.
  net::hostinet::StartUdpHostPath(net::NetNamespace::Root());
  // Host mode with an egress policy: the sandbox's own name server
  // (sentry/net/hostinet/name_server.h), which /etc/resolv.conf names.
  const bool name_server =
      spec.network == NetworkMode::kHost && spec.egress_policy &&
      net::hostinet::StartNameServer(net::NetNamespace::Root());
  std::unique_ptr<syscalls::SyscallTable> table =
      syscalls::SyscallTable::CreateLinux64();
  table->SetStraceOptions(
      {.log_calls = spec.strace, .count = spec.strace_summary});

  kernel::KernelOptions kopts;
  if (!spec.hostname.empty()) kopts.hostname = spec.hostname;
  kopts.host_cpu_flags = std::move(host_cpu_flags);
  kopts.max_tasks = spec.pids_limit;
  auto k = std::make_unique<kernel::Kernel>(plat.get(), *table, kopts);
  RegisterFilesystemTypes(*k);  // mount(2)'s types, /proc/filesystems
  // The OOM killer (sentry/kernel/oom.cc) answers allocations past
  // --memory; unset before the kernel goes.
  plat->memory_file().SetOomHandler(
      [kp = k.get()](uint64_t needed) { return kp->OutOfMemory(needed); });

  auto mm_or = mm::MemoryManager::Create(*plat, {.randomize = true});
  if (!mm_or.ok()) {
    return Fail(absl::StrFormat("cannot create an address space: %s",
                                mm_or.error().name()));
  }
  std::shared_ptr<mm::MemoryManager> mm = std::move(mm_or).value();
  Phase(start, "address space created");

  // The root file system (root_fs.h: the host root through the Gofer, or a
  // seeded tmpfs), /dev /proc /sys, /tmp, /dev/shm and the bind mounts.
  std::shared_ptr<vfs::MountNamespace> mntns;
  {
    std::string why;
    KResult<std::shared_ptr<vfs::MountNamespace>> ns =
        MakeRootNamespace(spec, *k, plat->memory_file(), &why);
    if (!ns.ok()) return Fail(why);
    mntns = std::move(ns).value();
  }
  Phase(start, "root file system ready");
  if (name_server) {
    const kernel::Credentials root = kernel::Credentials::Root();
    KResult<void> w = net::hostinet::WriteResolvConf(
        vfs::ResolveBase{root, mntns->Root(), mntns->Root()});
    if (!w.ok()) {
      kernel::LogWarning("/etc/resolv.conf for the sandbox's name server: %s",
                         w.error().message());
    }
  }

  const kernel::Credentials creds = kernel::Credentials::Root();
  vfs::ResolveBase base{creds, mntns->Root(), mntns->Root()};
  vfs::VirtualDentry cwd = mntns->Root();
  if (KResult<vfs::VirtualDentry> c = vfs::ChdirTarget(base, spec.cwd);
      c.ok()) {
    cwd = std::move(c).value();
  } else {
    kernel::LogWarning("working directory %s: %s; using /", spec.cwd,
                       c.error().message());
  }

  // The program: execvp's PATH search in the sandbox's own file system
  // (a name with a '/' is used as is, relative to the cwd).
  vfs::ResolveBase exec_base{creds, mntns->Root(), cwd};
  KResult<FoundProgram> found =
      FindProgram(exec_base, spec.exe_path, PathFromEnv(spec.envp));
  if (!found.ok()) {
    const bool search = spec.exe_path.find('/') == std::string::npos;
    kernel::LogError(
        "cannot execute %s: %s%s", spec.exe_path,
        found.error() == kENOENT && search ? "not found in PATH"
                                           : found.error().message(),
        found.error() == kEACCES && search ? " (found, not executable)" : "");
    WriteStatus(BootStatus::kExecFailed, found.error().number());
    return 126;
  }
  // "#!" scripts and PT_INTERP (ld.so) as execve does them.
  loader::ExecRequest req{exec_base, std::move(found->file), found->path};
  req.args.argv = spec.argv;
  req.args.envp = spec.envp;
  req.args.hwcap = loader::HwcapFromPlatform(*plat);
  req.args.minsigstksz = loader::DefaultMinSigStkSz(plat->FpStateSize());
  std::string why;
  bool committed = false;
  KResult<loader::ExecResult> lr =
      loader::LoadExecutable(*mm, std::move(req), &why, &committed);
  Phase(start, "program loaded");
  if (!lr.ok()) {
    kernel::LogError("cannot execute %s: %s (%s)%s%s", found->path,
                     lr.error().message(), lr.error().name(),
                     why.empty() ? "" : ": ", why);
    WriteStatus(BootStatus::kExecFailed, lr.error().number());
    return 126;
  }
  const std::string exe_path = lr->exe_path;

  kernel::NewProcessArgs pargs;
  pargs.limits = guest_limits;
  pargs.exe_path = exe_path;
  pargs.exe_file = lr->file->vd();
  pargs.creds = creds;
  pargs.fs = std::make_shared<vfs::FsContext>(mntns->Root(), std::move(cwd));
  pargs.fds = std::make_shared<vfs::FdTable>();
  InstallStdio(*pargs.fds);
  pargs.mm = mm;
  pargs.cpu.regs.rip = lr->load.entry;
  pargs.cpu.regs.rsp = lr->load.stack_pointer;
  pargs.cpu.regs.eflags = 0x202;
  pargs.cpu.regs.cs = 0x33;
  pargs.cpu.regs.ss = 0x2b;
  mm.reset();
  auto task = k->NewProcess(std::move(pargs));
  if (!task.ok()) return Fail("cannot create the first task");

  // Stage 2, the last step before guest code: the seccomp allowlist, on
  // every thread (after the platform: its source stub must not inherit it).
  if (!spec.unconfined) {
    bool host_sockets = false;
    for (const GoferMount& m : spec.gofer_mounts) {
      host_sockets |= m.host_sockets;
    }
    absl::Status s = confine::InstallSentryFilter(
        confine::SentryAllowlist({.self_pid = getpid(),
                                  .host_sockets = host_sockets,
                                  .host_network = spec.broker_fd >= 0}),
        spec.debug_seccomp ? confine::SeccompMode::kTrace
                           : confine::SeccompMode::kKill);
    if (!s.ok()) {
      return Fail("cannot install the seccomp filter: " + s.ToString());
    }
    Phase(start, "seccomp filter installed");
  }
  std::thread signals(SignalLoop, k.get(), fwd);
  Phase(start, "first task created");
  k->Start(task.value());
  kernel::ExitStatus status = k->WaitInit();
  Phase(start, "init exited");

  // Stop the signal thread.
  union sigval v = {};
  sigqueue(getpid(), SIGUSR2, v);
  signals.join();

  if (spec.strace_summary) {
    kernel::WriteDebug(table->Summary());
    kernel::WriteDebug(mm::StatsSummary());
    kernel::WriteDebug(fs::gofer::GoferStatsSummary());
    kernel::WriteDebug(plat->StatsSummary());
  }
  std::optional<std::string> fatal = k->fatal_error();
  // What still refers to the root's dentries and files goes before the kernel
  // and the platform: a last reference dropped after plat.reset() would free a
  // file's pages into a memory file that is gone (the Sentry segfaulted at
  // every exit, after the status was written).
  base.root = {};
  base.start = {};
  exec_base.root = {};
  exec_base.start = {};
  found->file.reset();
  lr->file.reset();
  plat->memory_file().SetOomHandler(nullptr);
  // The broker's reader delivers into the kernel's sockets: it stops
  // first. Closing the connection ends the broker.
  net::hostinet::StopNameServer();
  net::hostinet::StopUdpHostPath();
  net::hostinet::BrokerClient::Stop();
  k.reset();
  mntns.reset();  // Its files' pages live in the platform's memory file.
  Phase(start, "kernel destroyed");
  // The unix family's leak check: with every task and mount gone and one
  // more collection (cycles closed last wait for one), nothing is left
  // (test/e2e/sock_hostile_test reads this line).
  net::unix::CollectGarbage();
  const net::unix::Counters uc = net::unix::GetCounters();
  kernel::LogDebug(
      "unix sockets at exit: open=%d endpoints=%d inflight_files=%d "
      "inflight_sockets=%d",
      uc.open_sockets, uc.live_endpoints, uc.inflight_files,
      uc.inflight_sockets);
  plat.reset();
  Phase(start, "platform destroyed");
  if (fatal.has_value()) {
    WriteStatus(BootStatus::kSandboxFailed, 0);
    return 125;
  }
  WriteStatus(BootStatus::kGuestExited, status.ShellStatus());
  return 0;
}

}  // namespace sandbox::boot
