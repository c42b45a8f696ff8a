#include "fs_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "hostlm/error.h"

namespace hostlm::ollama {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw Error(what + ": " + std::strerror(err));
}

}  // namespace

TempFile::TempFile(const std::filesystem::path& dir) {
  std::string pattern = (dir / (std::string(kTempPrefix) + "XXXXXX")).string();
  fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) fail("cannot create a temporary file in " + dir.string(), errno);
  ::fchmod(fd_, 0644);  // blobs are world-readable like Ollama's
  path_ = pattern;
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(path_.c_str());
}

void TempFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write to " + path_.string() + " failed", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void TempFile::commit_to(const std::filesystem::path& target) {
  if (::fsync(fd_) != 0) fail("fsync of " + path_.string() + " failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close of " + path_.string() + " failed", errno);
  if (::rename(path_.c_str(), target.c_str()) != 0)
    fail("cannot rename " + path_.string() + " to " + target.string(), errno);
  committed_ = true;
  fsync_dir(target.parent_path());
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  TempFile tmp(path.parent_path());
  tmp.write(bytes.data(), bytes.size());
  tmp.commit_to(path);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw Error(path.string() + ": read failed");
  return s.str();
}

void fsync_dir(const std::filesystem::path& dir) {
  // A folder that refuses fsync (some network file systems) is not worth failing over:
  // the file itself is complete and durable.
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void make_dirs(const std::filesystem::path& dir) {
  if (dir.empty() || std::filesystem::is_directory(dir)) return;
  make_dirs(dir.parent_path());
  std::error_code ec;
  std::filesystem::create_directory(dir, ec);
  if (ec && !std::filesystem::is_directory(dir))
    throw Error("cannot create folder " + dir.string() + ": " + ec.message());
  fsync_dir(dir.parent_path());
}

FileLock::FileLock(const std::filesystem::path& path, bool exclusive) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot open lock file " + path.string(), errno);
  while (::flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    fail("cannot lock " + path.string(), err);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

void test_pause_point(const char* point) {
  const char* want = std::getenv("HOSTLM_STORE_TEST_PAUSE");
  if (!want || std::strcmp(want, point) != 0) return;
  if (const char* flag = std::getenv("HOSTLM_STORE_TEST_PAUSE_FILE")) {
    std::ofstream(flag) << point << '\n';
  }
  for (;;) ::pause();
}

}  // namespace hostlm::ollama
