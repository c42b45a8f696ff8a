// Writing blobs: bytes go to a temporary file in blobs/ while they are hashed; the file is
// renamed to its digest only when the digest is the one expected.
#include <sys/stat.h>
#include <utime.h>

#include <fstream>
#include <vector>

#include "digest.h"
#include "fs_util.h"
#include "hostlm/error.h"
#include "store_impl.h"

namespace hostlm::ollama {
namespace fs = std::filesystem;

struct BlobWriter::Impl {
  const ModelStore::Impl* store = nullptr;
  std::unique_ptr<TempFile> file;
  Sha256 hash;
  uint64_t bytes = 0;
  bool committed = false;
  bool existed = false;
};

BlobWriter::BlobWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlobWriter::~BlobWriter() = default;
BlobWriter::BlobWriter(BlobWriter&&) noexcept = default;
BlobWriter& BlobWriter::operator=(BlobWriter&&) noexcept = default;

void BlobWriter::write(const void* data, size_t n) {
  if (impl_->committed) throw Error("blob writer: write after commit");
  impl_->file->write(data, n);
  impl_->hash.update(data, n);
  impl_->bytes += n;
  // Crash tests stop here, half-way through a blob.
  if (impl_->bytes > 0) test_pause_point("blob-write");
}

uint64_t BlobWriter::bytes_written() const { return impl_->bytes; }
bool BlobWriter::existed() const { return impl_->existed; }

std::string BlobWriter::commit(std::optional<std::string_view> expected) {
  if (impl_->committed) throw Error("blob writer: committed twice");
  impl_->committed = true;
  const std::string got = "sha256:" + impl_->hash.hex();
  if (expected) {
    const std::string want = normalize_digest(*expected);
    if (want != got)
      throw bad_request("digest mismatch, expected \"" + want + "\", got \"" + got + "\"");
  }
  const fs::path target = impl_->store->own_blob(got);
  std::error_code ec;
  if (fs::exists(target, ec)) {
    impl_->existed = true;
    ::utime(target.c_str(), nullptr);  // keeps it young for prune(), as Ollama does
    impl_->file.reset();               // the temporary copy goes
  } else {
    impl_->file->commit_to(target);
  }
  return got;
}

BlobWriter ModelStore::begin_blob() {
  impl_->ensure_layout();
  auto w = std::make_unique<BlobWriter::Impl>();
  w->store = impl_.get();
  w->file = std::make_unique<TempFile>(impl_->blobs_dir(impl_->root));
  return BlobWriter(std::move(w));
}

bool ModelStore::put_blob(std::string_view digest, std::istream& in) {
  const std::string want = normalize_digest(digest);
  BlobWriter w = begin_blob();
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) w.write(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error("reading the blob " + want + " failed");
  w.commit(want);
  return !w.existed();
}

std::string ModelStore::put_file(const fs::path& path, const ProgressFn& progress) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_request(path.string() + ": cannot open");
  std::error_code ec;
  const uint64_t total = fs::file_size(path, ec);
  BlobWriter w = begin_blob();
  std::vector<char> buf(4 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) w.write(buf.data(), static_cast<size_t>(in.gcount()));
    if (progress) progress({"copying file", "", total, w.bytes_written()});
  }
  if (in.bad()) throw Error(path.string() + ": read failed");
  return w.commit();
}

}  // namespace hostlm::ollama
