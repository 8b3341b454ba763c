// The CPUID answers guests see: the host's, masked to what the sandbox
// supports and consistent with the XSAVE features it saves and restores.
// The processor brand string (leaves 0x80000002-4, /proc/cpuinfo's "model
// name") is kCpuBrand, not the host's: the host's exact CPU model is not the
// guest's business (vendor, family, model and stepping stay, as software
// tunes itself by them).
#ifndef PLATFORM_SYSTRAP_CPUID_H_
#define PLATFORM_SYSTRAP_CPUID_H_

#include <stdint.h>

#include <map>
#include <utility>

namespace sandbox::platform {

inline constexpr char kCpuBrand[] = "Virtual CPU (sandbox)";

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

class CpuidTable {
 public:
  // Reads the host's leaves once. `xfeatures` is the user XSAVE feature mask
  // the platform saves (XCR0 without dynamic features), `xsave_size` its
  // XSAVE image size, `fsgsbase` whether the kernel enabled FSGSBASE.
  void Init(uint64_t xfeatures, uint32_t xsave_size, bool fsgsbase);

  // Sub-leaf-aware lookup; unknown leaves answer zeroes.
  CpuidRegs Query(uint32_t leaf, uint32_t subleaf) const;

 private:
  static bool HasSubleaves(uint32_t leaf);
  std::map<std::pair<uint32_t, uint32_t>, CpuidRegs> table_;
};

}  // namespace sandbox::platform

#endif  // PLATFORM_SYSTRAP_CPUID_H_
