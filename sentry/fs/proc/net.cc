#include "sentry/fs/proc/net.h"

#include <limits.h>
#include <stdlib.h>

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/net/namespace.h"
#include "sentry/net/proc_net.h"

namespace sandbox::fs::proc {
namespace {

// SOCK_MIN_RCVBUF / SOCK_MIN_SNDBUF (2048 + the aligned struct sk_buff;
// twice that for send buffers): the least rmem_* / wmem_* take.
constexpr int64_t kMinRcvbuf = 2304;
constexpr int64_t kMinSndbuf = 4608;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n'; }

std::shared_ptr<vfs::Inode> Sysctl(kernfs::Filesystem& fs,
                                   std::atomic<int64_t> net::NetSysctls::*v,
                                   int64_t min, int64_t max) {
  auto f = std::make_shared<kernfs::GeneratedFile>(
      fs, 0644, [v]() -> KResult<std::string> {
        return absl::StrCat((net::NetNamespace::Root().sysctl().*v).load(),
                            "\n");
      });
  f->SetWriter([v, min, max](std::string_view data) -> KResult<size_t> {
    size_t consumed = 0;
    TRY(std::optional<int64_t> val, ParseSysctlInt(data, min, max, &consumed));
    if (val) (net::NetNamespace::Root().sysctl().*v).store(*val);
    return consumed;
  });
  return f;
}

}  // namespace

KResult<std::optional<int64_t>> ParseSysctlInt(std::string_view data,
                                               int64_t min, int64_t max,
                                               size_t* consumed) {
  size_t i = 0;
  while (i < data.size() && IsSpace(data[i])) ++i;
  if (i == data.size()) {
    *consumed = data.size();
    return std::optional<int64_t>();
  }
  // proc_get_long: the number is copied to a 22-byte buffer first.
  constexpr size_t kTmpBufLen = 22;
  std::string tmp(data.substr(i, kTmpBufLen - 1));
  bool neg = false;
  size_t j = 0;
  if (!tmp.empty() && tmp[0] == '-') {
    neg = true;
    j = 1;
  }
  if (j >= tmp.size() || !isdigit(static_cast<unsigned char>(tmp[j]))) {
    return kEINVAL;
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long u = strtoull(tmp.c_str() + j, &end, 0);
  if (errno == ERANGE) return kEINVAL;
  size_t len = static_cast<size_t>(end - tmp.c_str());
  // A number filling the buffer may have been cut: too long.
  if (len > kTmpBufLen - 2) return kEINVAL;
  size_t after = i + len;
  if (after < data.size() && !IsSpace(data[after])) return kEINVAL;
  int64_t v;
  if (neg) {
    if (u > static_cast<unsigned long long>(INT_MAX) + 1) return kEINVAL;
    v = -static_cast<int64_t>(u);
  } else {
    if (u > static_cast<unsigned long long>(INT_MAX)) return kEINVAL;
    v = static_cast<int64_t>(u);
  }
  if (v < min || v > max) return kEINVAL;
  while (after < data.size() && IsSpace(data[after])) ++after;
  *consumed = after;
  return std::optional<int64_t>(v);
}

std::shared_ptr<kernfs::Dir> NewNetDir(kernfs::Filesystem& fs) {
  auto dir = std::make_shared<kernfs::Dir>(fs, 0555);
  for (const std::string& name : net::ProcNetFileNames()) {
    dir->Add(name, std::make_shared<kernfs::GeneratedFile>(
                       fs, 0444, [name]() -> KResult<std::string> {
                         std::optional<std::string> s =
                             net::GenerateProcNetFile(
                                 name, net::NetNamespace::Root());
                         if (!s) return kENOENT;
                         return *s;
                       }));
  }
  return dir;
}

std::shared_ptr<kernfs::Dir> NewSysNetDir(kernfs::Filesystem& fs) {
  using S = net::NetSysctls;
  auto core = std::make_shared<kernfs::Dir>(fs, 0555);
  // net.core.somaxconn: proc_dointvec_minmax with extra1 = 0.
  core->Add("somaxconn", Sysctl(fs, &S::somaxconn, 0, INT_MAX));
  core->Add("rmem_max", Sysctl(fs, &S::rmem_max, kMinRcvbuf, INT_MAX));
  core->Add("wmem_max", Sysctl(fs, &S::wmem_max, kMinSndbuf, INT_MAX));
  core->Add("rmem_default", Sysctl(fs, &S::rmem_default, kMinRcvbuf, INT_MAX));
  core->Add("wmem_default", Sysctl(fs, &S::wmem_default, kMinSndbuf, INT_MAX));
  auto unix_dir = std::make_shared<kernfs::Dir>(fs, 0555);
  // net.unix.max_dgram_qlen: proc_dointvec (any int).
  unix_dir->Add("max_dgram_qlen",
                Sysctl(fs, &S::max_dgram_qlen, INT_MIN, INT_MAX));
  auto net_dir = std::make_shared<kernfs::Dir>(fs, 0555);
  net_dir->Add("core", core);
  net_dir->Add("unix", unix_dir);
  return net_dir;
}

}  // namespace sandbox::fs::proc
