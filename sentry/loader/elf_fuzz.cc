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
  // The same bytes as an interpreter: ELIBBAD/EIO/ok, always with a reason.
  auto as_interp =
      loader::ParseElfHeaders(reader, loader::ElfRole::kInterpreter, &why);
  if (!as_interp.ok() && why.empty()) __builtin_trap();
  if (as_interp.ok()) {
    why.clear();
    auto seg = loader::ValidateSegments(*as_interp, size, &why);
    if (!seg.ok() && why.empty()) __builtin_trap();
  }
  why.clear();
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
  bool committed = false;
  auto r = loader::Load(**mm, reader, args, &why, &committed);
  if (r.ok() && (r->stack_pointer % 16) != 0) __builtin_trap();
  // ParseElf accepted the file and the interpreter is the same bytes, so
  // only an empty PT_INTERP path (ENOENT) fails before the point of no
  // return.
  if (!r.ok() && !committed && r.error() != kENOENT) __builtin_trap();
  return 0;
}
