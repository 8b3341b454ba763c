#include "platform/systrap/cpuid.h"

#include <cpuid.h>
#include <string.h>

namespace sandbox::platform {
namespace {

CpuidRegs Host(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

// Leaf 0xd sub-leaves beyond 19 (AMX tile data is 18) are reserved; each
// CPUID costs ~10 us in a nested VM, so the table reads no more.
constexpr uint32_t kMaxSubleaf = 20;

}  // namespace

bool CpuidTable::HasSubleaves(uint32_t leaf) {
  switch (leaf) {
    case 0x4:
    case 0x7:
    case 0xb:
    case 0xd:
    case 0xf:
    case 0x10:
    case 0x12:
    case 0x14:
    case 0x17:
    case 0x18:
    case 0x1d:
    case 0x1e:
    case 0x1f:
    case 0x8000001d:
      return true;
    default:
      return false;
  }
}

void CpuidTable::Init(uint64_t xfeatures, uint32_t xsave_size, bool fsgsbase) {
  table_.clear();
  uint32_t max_basic = Host(0, 0).eax;
  if (max_basic > 0x20) max_basic = 0x20;
  uint32_t max_ext = Host(0x80000000, 0).eax;
  if (max_ext > 0x80000021) max_ext = 0x80000021;
  auto add_leaf = [&](uint32_t leaf) {
    uint32_t n = HasSubleaves(leaf) ? (leaf == 0xd ? kMaxSubleaf : 8) : 1;
    for (uint32_t sub = 0; sub < n; ++sub) {
      table_[{leaf, sub}] = Host(leaf, sub);
    }
  };
  for (uint32_t l = 0; l <= max_basic; ++l) add_leaf(l);
  for (uint32_t l = 0x80000000; l <= max_ext; ++l) add_leaf(l);

  // Leaf 7: no AMX (its tile data is not saved), no protection keys
  // (pkey_* are not implemented), FSGSBASE only if the kernel enabled it.
  for (uint32_t sub = 0; sub < 8; ++sub) {
    auto it = table_.find({7, sub});
    if (it == table_.end()) continue;
    if (sub == 0) {
      if (!fsgsbase) it->second.ebx &= ~1u;
      it->second.ecx &= ~((1u << 3) | (1u << 4));                 // PKU, OSPKE
      it->second.edx &= ~((1u << 22) | (1u << 24) | (1u << 25));  // AMX
    } else if (sub == 1) {
      it->second.eax &= ~((1u << 21) | (1u << 8));  // AMX-FP16, AMX-COMPLEX
    }
  }
  // The brand string: 48 bytes, NUL-padded, over three leaves.
  if (max_ext >= 0x80000004) {
    char brand[48] = {};
    static_assert(sizeof(kCpuBrand) <= sizeof(brand));
    memcpy(brand, kCpuBrand, sizeof(kCpuBrand));
    for (uint32_t i = 0; i < 3; ++i) {
      CpuidRegs& r = table_[{0x80000002 + i, 0}];
      memcpy(&r.eax, brand + 16 * i, 4);
      memcpy(&r.ebx, brand + 16 * i + 4, 4);
      memcpy(&r.ecx, brand + 16 * i + 8, 4);
      memcpy(&r.edx, brand + 16 * i + 12, 4);
    }
  }
  for (uint32_t l : {0x1du, 0x1eu}) {
    for (uint32_t sub = 0; sub < 8; ++sub) table_.erase({l, sub});
  }
  // Leaf 0xd: exactly the features the platform saves and restores.
  if (table_.count({0xd, 0})) {
    CpuidRegs& r = table_[{0xd, 0}];
    r.eax = static_cast<uint32_t>(xfeatures);
    r.edx = static_cast<uint32_t>(xfeatures >> 32);
    r.ebx = xsave_size;
    r.ecx = xsave_size;
    CpuidRegs& r1 = table_[{0xd, 1}];
    r1.eax &= ~(1u << 3);  // XSAVES: supervisor state is not exposed
    r1.ebx = 0;
    r1.ecx = 0;
    r1.edx = 0;
    for (uint32_t sub = 2; sub < kMaxSubleaf; ++sub) {
      if (!(xfeatures & (1ull << sub))) table_[{0xd, sub}] = CpuidRegs();
    }
  }
}

CpuidRegs CpuidTable::Query(uint32_t leaf, uint32_t subleaf) const {
  if (!HasSubleaves(leaf)) subleaf = 0;
  auto it = table_.find({leaf, subleaf});
  if (it == table_.end()) return CpuidRegs();
  return it->second;
}

}  // namespace sandbox::platform
