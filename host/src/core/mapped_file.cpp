#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "hostlm/error.h"

namespace hostlm {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* what, int err) {
  throw Error(path.string() + ": " + what + ": " + std::generic_category().message(err));
}

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the type check below
  // rejects it instead. It has no effect on regular files.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) fail(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(path, "cannot stat", errno);
  // Directories and devices would map (or fail) in confusing ways; say what is wrong instead.
  if (!S_ISREG(st.st_mode)) throw Error(path.string() + ": not a regular file");
  size_ = static_cast<size_t>(st.st_size);
  // mmap refuses length 0; an empty file simply has no bytes to view.
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (p == MAP_FAILED) fail(path, "cannot map", errno);
  data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace hostlm
