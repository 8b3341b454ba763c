#include "sentry/loader/file_reader.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace sandbox::loader {

KResult<size_t> HostFdReader::ReadAt(uint64_t offset, void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t done = 0;
  while (done < n) {
    if (offset + done > static_cast<uint64_t>(INT64_MAX)) break;
    ssize_t r =
        pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      if (done > 0) break;
      return Errno(errno);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

KResult<uint64_t> HostFdReader::Size() {
  struct stat st;
  if (fstat(fd_, &st) != 0) return Errno(errno);
  if (!S_ISREG(st.st_mode)) return kEACCES;  // execve of a non-file
  return static_cast<uint64_t>(st.st_size);
}

KResult<size_t> BufferReader::ReadAt(uint64_t offset, void* buf, size_t n) {
  if (offset >= data_.size()) return size_t{0};
  size_t k = std::min<uint64_t>(n, data_.size() - offset);
  std::memcpy(buf, data_.data() + offset, k);
  return k;
}

}  // namespace sandbox::loader
