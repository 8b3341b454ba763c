#include "sentry/abi/syscalls.h"

#include <array>

namespace sandbox::abi {
namespace {

constexpr std::array<const char*, kMaxSyscall> MakeNames() {
  std::array<const char*, kMaxSyscall> names{};
#define X(number, name) names[number] = #name;
#include "sentry/abi/syscalls_x86_64.inc"
#undef X
  return names;
}

constexpr std::array<const char*, kMaxSyscall> kNames = MakeNames();

}  // namespace

const char* SyscallName(int number) {
  if (number < 0 || number >= kMaxSyscall) return nullptr;
  return kNames[number];
}

}  // namespace sandbox::abi
