#include "sentry/mm/stats.h"

#include "absl/strings/str_format.h"

namespace sandbox::mm {

MmStats& Stats() {
  static MmStats* stats = new MmStats();
  return *stats;
}

std::string StatsSummary() {
  MmStats& s = Stats();
  auto get = [](const std::atomic<uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  return absl::StrFormat(
      "mm: %d guest faults (%d private pages backed), %d host maps (%d pages), "
      "%d "
      "host unmaps, %d file translations, %d copy-on-write copies",
      get(s.faults), get(s.fault_pages), get(s.host_maps),
      get(s.host_map_pages), get(s.host_unmaps), get(s.translates),
      get(s.cow_copies));
}

}  // namespace sandbox::mm
