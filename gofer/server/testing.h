// Test helpers: a temporary tree with a served root and an "outside" beside
// it, and a server thread on a socketpair driven by a GoferClient.
#ifndef GOFER_SERVER_TESTING_H_
#define GOFER_SERVER_TESTING_H_

#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gofer/protocol/client.h"
#include "gofer/server/server.h"
#include "gtest/gtest.h"

namespace gofer::testing {

// base/root is served; base/outside must stay unreachable.
class TempTree {
 public:
  TempTree() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string tmpl = std::string(tmp ? tmp : "/tmp") + "/gofer.XXXXXX";
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    base_ = tmpl;
    std::filesystem::create_directory(root());
    std::filesystem::create_directory(outside());
  }
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }
  std::string root() const { return base_ + "/root"; }
  std::string outside() const { return base_ + "/outside"; }
  std::string base() const { return base_; }

 private:
  std::string base_;
};

// Writes content to path (host side, for setting up hostile trees).
inline void WriteFile(const std::string& path, const std::string& content) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(write(fd, content.data(), content.size()),
            static_cast<ssize_t>(content.size()));
  close(fd);
}

// Whether id is mapped in this process's user namespace (uid_map or
// gid_map): a chown to an unmapped id is the host's EINVAL (as inside
// Bazel's sandbox, which maps only root).
inline bool IdMapped(const char* map, uint32_t id) {
  FILE* f = fopen(map, "re");
  if (f == nullptr) return false;
  unsigned long inside, outside, count;
  bool found = false;
  while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3) {
    found |= id >= inside && id - inside < count;
  }
  fclose(f);
  return found;
}

// Reads everything from fd at offset 0.
inline std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  off_t off = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof(buf), off);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return out;
}

// A server thread serving dir over a socketpair, and the client end.
class Harness {
 public:
  explicit Harness(const std::string& dir, ServerOptions options = {}) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    raw_ = sv[0];
    client_ = std::make_unique<GoferClient>(UniqueFd(sv[0]));
    UniqueFd root(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    EXPECT_TRUE(root.valid());
    server_ = std::thread([this, fd = sv[1], r = root.release(), options] {
      result_ = ServeConnection(UniqueFd(fd), UniqueFd(r), options);
    });
    AttachResp a;
    EXPECT_EQ(client_->Call(AttachReq{}, &a), 0);
    root_ = a.root.handle;
  }
  ~Harness() {
    client_.reset();  // Closes the socket: the server sees end of stream.
    server_.join();
  }

  GoferClient& client() { return *client_; }
  Handle root() const { return root_; }
  int raw_fd() const { return raw_; }  // Owned by the client.
  int server_result() const { return result_; }

  // Walks names from dir; returns the reply (error via *err).
  WalkResp Walk(Handle dir, std::vector<std::string> names, int* err) {
    WalkResp r;
    *err = client_->Call(WalkReq{dir, std::move(names)}, &r);
    return r;
  }
  // Walks names from the root, expecting a complete walk; returns the last
  // handle (0 on failure).
  Handle MustWalk(std::vector<std::string> names) {
    int err;
    WalkResp r = Walk(root_, names, &err);
    EXPECT_EQ(err, 0);
    EXPECT_EQ(r.status, WalkStatus::kOk) << r.error;
    if (err != 0 || r.status != WalkStatus::kOk || r.inodes.empty()) return 0;
    return r.inodes.back().handle;
  }

 private:
  std::unique_ptr<GoferClient> client_;
  std::thread server_;
  Handle root_ = 0;
  int raw_ = -1;
  int result_ = 0;
};

}  // namespace gofer::testing

#endif  // GOFER_SERVER_TESTING_H_
