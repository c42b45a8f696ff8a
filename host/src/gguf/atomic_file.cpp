#include "gguf/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "hostlm/error.h"

namespace hostlm::gguf {

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
  temp_ = path_;
  temp_ += ".tmp-" + std::to_string(::getpid());
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create temporary file " + temp_.string(), errno);
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what, int err) {
  discard();
  throw Error(path_.string() + ": " + what + ": " + std::strerror(err));
}

void AtomicFile::write(const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    // Linux transfers at most ~2 GiB per call; large tensors take several.
    const size_t chunk = std::min<size_t>(size, size_t{1} << 30);
    const ssize_t n = ::write(fd_, p, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write to " + temp_.string() + " failed", errno);
    }
    if (n == 0) fail("write to " + temp_.string() + " made no progress", EIO);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("fsync of " + temp_.string() + " failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close of " + temp_.string() + " failed", errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    fail("cannot rename " + temp_.string() + " into place", errno);
  committed_ = true;
  // Makes the rename itself durable. The file is already complete and in place, so a
  // directory that refuses fsync (some network file systems) is not worth failing over.
  std::filesystem::path dir = path_.parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace hostlm::gguf
