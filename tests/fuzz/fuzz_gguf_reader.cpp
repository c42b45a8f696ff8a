// libFuzzer target for the GGUF reader. The input is parsed in memory (a heap buffer of its
// exact size, so ASan sees any read past the end, which a page-rounded mapping would hide).
// Beyond "no crash, only hostlm::Error" it checks what callers rely on: every view lies
// inside the image with the size its type and shape need, the typed getters throw only
// hostlm::Error, and whatever the reader accepts, the writer re-emits as a file the reader
// accepts again with the same metadata and tensor bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_emit.h"
#include "gguf/gguf_open.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace {

constexpr const char* kName = "fuzz.gguf";

void check(bool ok) {
  if (!ok) std::abort();
}

bool same_value(const hostlm::GgufValue& a, const hostlm::GgufValue& b) {
  if (a.type() != b.type() || a.storage().index() != b.storage().index()) return false;
  if (const auto* x = std::get_if<double>(&a.storage())) {
    const double y = std::get<double>(b.storage());
    return std::memcmp(x, &y, sizeof y) == 0;
  }
  if (a.type() != hostlm::GgufType::ARRAY) return a.storage() == b.storage();
  const hostlm::GgufArray* x = a.as_array();
  const hostlm::GgufArray* y = b.as_array();
  if (x->element_type != y->element_type || x->elements.size() != y->elements.size()) return false;
  for (size_t i = 0; i < x->elements.size(); ++i)
    if (!same_value(x->elements[i], y->elements[i])) return false;
  return true;
}

template <class F>
void expect_only_hostlm_errors(F&& f) {
  try {
    f();
  } catch (const hostlm::Error& e) {
    check(std::string(e.what()).rfind(std::string(kName) + ": ", 0) == 0);
  }
}

void exercise_getters(const hostlm::GgufFile& f) {
  for (const auto& kv : f.metadata()) {
    const std::string& key = kv.first;  // clang 14 lambdas cannot capture structured bindings
    check(f.find(key) == &kv.second);
    expect_only_hostlm_errors([&] { f.get_int(key); });
    expect_only_hostlm_errors([&] { f.get_float(key); });
    expect_only_hostlm_errors([&] { f.get_bool(key); });
    expect_only_hostlm_errors([&] { f.get_string(key); });
    expect_only_hostlm_errors([&] { f.get_int_array(key); });
    expect_only_hostlm_errors([&] { f.get_string_array(key); });
  }
}

void exercise_views(const hostlm::GgufFile& f, std::span<const unsigned char> image) {
  const unsigned char* begin = image.data();
  const unsigned char* end = image.data() + image.size();
  for (const hostlm::GgufTensorInfo& t : f.tensors()) {
    check(f.find_tensor(t.name) == &t);
    check(t.offset % f.alignment() == 0);
    const hostlm::TensorView v = f.view(t);
    const auto* p = static_cast<const unsigned char*>(v.data);
    check(v.nbytes == t.nbytes && v.nbytes > 0);
    check(p >= begin && p < end && v.nbytes <= static_cast<size_t>(end - p));
    check(v.shape.size() == t.ne.size());
    // Touch both ends so ASan would flag a view that escapes the buffer.
    volatile unsigned char first = p[0];
    volatile unsigned char last = p[v.nbytes - 1];
    (void)first;
    (void)last;
  }
}

void round_trip(const hostlm::GgufFile& f) {
  // Legal but huge alignments would make the re-emitted image gigabytes of padding.
  if (f.alignment() > (1u << 16)) return;
  std::vector<hostlm::gguf::EmitTensor> tensors;
  for (const hostlm::GgufTensorInfo& t : f.tensors()) tensors.push_back({&t, f.view(t).data});
  std::vector<unsigned char> out;
  try {
    hostlm::gguf::emit_gguf(f.alignment(), f.metadata(), tensors, kName,
                            [&](const void* data, size_t size) {
                              const auto* b = static_cast<const unsigned char*>(data);
                              out.insert(out.end(), b, b + size);
                            });
  } catch (const hostlm::Error&) {
    // The writer is stricter than the reader in one respect only: it writes
    // general.alignment as a u32 (what gguf-py requires), the reader takes any integer.
    const hostlm::GgufValue* a = f.find("general.alignment");
    check(a && a->type() != hostlm::GgufType::U32);
    return;
  }
  auto g = hostlm::gguf::open_gguf_bytes(out, kName);  // must not throw
  check(g->version() == 3 && g->alignment() == f.alignment());
  check(g->metadata().size() == f.metadata().size());
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    check(g->metadata()[i].first == f.metadata()[i].first);
    check(same_value(g->metadata()[i].second, f.metadata()[i].second));
  }
  check(g->tensors().size() == f.tensors().size());
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = g->tensors()[i];
    check(a.name == b.name && a.type == b.type && a.ne == b.ne && a.nbytes == b.nbytes);
    check(std::memcmp(f.view(a).data, g->view(b).data, a.nbytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libFuzzer's buffer is already exactly `size` bytes long.
  const std::span<const unsigned char> image(data, size);
  std::unique_ptr<hostlm::GgufFile> f;
  try {
    f = hostlm::gguf::open_gguf_bytes(image, kName);
  } catch (const hostlm::Error& e) {
    check(std::string(e.what()).rfind(std::string(kName) + ": ", 0) == 0);
    return 0;
  }
  exercise_getters(*f);
  exercise_views(*f, image);
  round_trip(*f);
  return 0;
}
