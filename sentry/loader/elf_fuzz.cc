// Fuzz target: ELF header/program-header parsing and loading into a fake
// address space. Any input must give a result or an errno, never a crash.
#include <stddef.h>
#include <stdint.h>

#include <string>

#include "sentry/loader/elf.h"
#include "sentry/loader/file_reader.h"
#include "sentry/loader/loader.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandbox;
  static auto* platform = new mm::testing::FakePlatform(1ull << 30);
  loader::BufferReader reader(data, size);
  std::string why;
  auto info = loader::ParseElf(reader, &why);
  if (!info.ok()) {
    if (why.empty()) __builtin_trap();  // every rejection says why
    return 0;
  }
  auto mm = mm::MemoryManager::Create(*platform, {.randomize = false});
  if (!mm.ok()) return 0;
  loader::LoadArgs args;
  args.argv = {"fuzz"};
  args.envp = {"A=B"};
  args.exec_path = "/fuzz";
  args.open_interpreter = [&](const std::string&)
      -> sandbox::KResult<std::unique_ptr<loader::FileReader>> {
    return std::unique_ptr<loader::FileReader>(
        new loader::BufferReader(data, size));
  };
  auto r = loader::Load(**mm, reader, args, &why);
  if (r.ok() && (r->stack_pointer % 16) != 0) __builtin_trap();
  return 0;
}
