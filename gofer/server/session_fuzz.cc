// Fuzz target for the server: hostile message sequences against a real
// tree, dispatched to a Session (no socket).
//
// Input: messages of [u8 type][u16 length, little-endian][length bytes],
// run after an Attach (so handle 1 is the root and later handles count
// up from 2). Before each input the tree is rebuilt: root/{d/, d/f, l ->
// ../outside, abs -> outside (absolute), etc -> /etc, fifo} beside
// outside/secret. Checks: no crash, every reply bounded, and outside/secret
// unchanged (content and mode) and alone in outside/.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "gofer/server/session.h"

namespace {

std::string* base;

void WriteFile(const std::string& path, const char* content) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::abort();
  if (write(fd, content, strlen(content)) < 0) std::abort();
  close(fd);
}

void Rebuild() {
  std::error_code ec;
  std::filesystem::remove_all(*base + "/root", ec);
  std::filesystem::create_directories(*base + "/root/d");
  WriteFile(*base + "/root/d/f", "inside");
  symlink("../outside", (*base + "/root/l").c_str());
  symlink((*base + "/outside").c_str(), (*base + "/root/abs").c_str());
  symlink("/etc", (*base + "/root/etc").c_str());
  mkfifo((*base + "/root/fifo").c_str(), 0644);
}

void CheckOutside() {
  int n = 0;
  for ([[maybe_unused]] auto& e :
       std::filesystem::directory_iterator(*base + "/outside")) {
    ++n;
  }
  struct stat st;
  if (n != 1 || stat((*base + "/outside/secret").c_str(), &st) != 0 ||
      (st.st_mode & 07777) != 0600 || st.st_size != 7) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(tmp ? tmp : "/tmp") + "/session_fuzz.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  base = new std::string(tmpl);
  std::filesystem::create_directories(*base + "/outside");
  WriteFile(*base + "/outside/secret", "outside");
  chmod((*base + "/outside/secret").c_str(), 0600);
  umask(0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (base == nullptr) LLVMFuzzerInitialize(nullptr, nullptr);
  Rebuild();
  {
    gofer::ServerOptions opts;
    opts.max_handles = 64;
    opts.read_only = size > 0 && (data[0] & 0x80);  // Both modes.
    gofer::Session s(gofer::UniqueFd(open((*base + "/root").c_str(),
                                          O_PATH | O_DIRECTORY | O_CLOEXEC)),
                     opts);
    s.Dispatch(static_cast<uint16_t>(gofer::MessageType::kAttach), "");
    size_t pos = 0;
    for (int n = 0; n < 64 && size - pos >= 3; ++n) {
      uint16_t type = data[pos];
      size_t len = data[pos + 1] | (size_t{data[pos + 2]} << 8);
      pos += 3;
      len = std::min(len, size - pos);
      std::string_view payload(reinterpret_cast<const char*>(data) + pos, len);
      pos += len;
      gofer::Reply r = s.Dispatch(type, payload);
      if (r.payload.size() > gofer::kMaxPayload) std::abort();
      if (r.error != 0 && (!r.payload.empty() || r.fd.valid())) std::abort();
    }
  }
  CheckOutside();
  return 0;
}
