#include "sentry/net/proc_net.h"

#include <algorithm>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/net/stack/interfaces.h"

namespace sandbox::net {
namespace {

struct Registry {
  absl::Mutex mu;
  std::map<std::string, ProcNetGenerator, std::less<>> files
      ABSL_GUARDED_BY(mu);
  Registry() {
    absl::MutexLock l(&mu);
    files["dev"] = [](NetNamespace& ns) {
      return stack::FormatProcNetDev(ns.Get<stack::Interfaces>());
    };
    files["if_inet6"] = [](NetNamespace& ns) {
      return stack::FormatProcNetIfInet6(ns.Get<stack::Interfaces>());
    };
    files["netlink"] = [](NetNamespace&) {
      return std::string(kProcNetNetlinkHeader);
    };
    files["unix"] = [](NetNamespace&) {
      return std::string(kProcNetUnixHeader);
    };
  }
};

Registry& GetRegistry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

void RegisterProcNetFile(std::string name, ProcNetGenerator gen) {
  Registry& r = GetRegistry();
  absl::MutexLock l(&r.mu);
  r.files[std::move(name)] = std::move(gen);
}

std::vector<std::string> ProcNetFileNames() {
  Registry& r = GetRegistry();
  absl::MutexLock l(&r.mu);
  std::vector<std::string> out;
  for (const auto& [name, gen] : r.files) out.push_back(name);
  return out;
}

std::optional<std::string> GenerateProcNetFile(std::string_view name,
                                               NetNamespace& ns) {
  ProcNetGenerator gen;
  {
    Registry& r = GetRegistry();
    absl::MutexLock l(&r.mu);
    auto it = r.files.find(name);
    if (it == r.files.end()) return std::nullopt;
    gen = it->second;
  }
  return gen(ns);
}

}  // namespace sandbox::net
