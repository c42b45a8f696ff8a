// libFuzzer target for the safetensors header parser. Each input is parsed twice: as the raw
// image of a .safetensors file, and as "<header JSON> NUL <data>" wrapped with a correct length
// field, because random mutation rarely keeps the 8-byte length consistent with the JSON.
// Beyond "no crash" it checks what callers rely on: every view lies inside the image and owns
// exactly the bytes its dtype and shape need, views are sorted and disjoint, and errors name
// the file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "hostlm/dtype.h"
#include "hostlm/error.h"
#include "safetensors/header.h"

namespace {

constexpr std::string_view kLabel = "fuzz.safetensors";

void check(bool ok) {
  if (!ok) std::abort();
}

void parse_image(const std::byte* bytes, size_t size) {
  try {
    const auto parsed = hostlm::safetensors::parse_safetensors(bytes, size, std::string(kLabel));
    check(parsed.metadata.is_object());
    std::vector<std::pair<const std::byte*, size_t>> spans;
    for (size_t i = 0; i < parsed.tensors.size(); ++i) {
      const hostlm::TensorView& t = parsed.tensors[i];
      if (i > 0) check(parsed.tensors[i - 1].name < t.name);
      check(!parsed.unsupported.contains(t.name));
      const auto* p = static_cast<const std::byte*>(t.data);
      check(p >= bytes && t.nbytes <= static_cast<size_t>(bytes + size - p));
      check(hostlm::dtype_bytes(t.type, static_cast<uint64_t>(t.n_elements())) == t.nbytes);
      // Reading every byte lets ASan confirm the view really is inside the buffer.
      unsigned sum = 0;
      for (size_t j = 0; j < t.nbytes; ++j) sum += static_cast<unsigned>(p[j]);
      asm volatile("" : : "r"(sum));
      if (t.nbytes) spans.emplace_back(p, t.nbytes);
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      check(spans[i - 1].first + spans[i - 1].second <= spans[i].first);
  } catch (const hostlm::Error& e) {
    check(std::string_view(e.what()).starts_with(std::string(kLabel) + ": "));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  parse_image(bytes, size);

  // JSON text cannot contain a raw NUL, so it cleanly separates header and data.
  const auto* nul = std::find(bytes, bytes + size, std::byte{0});
  const uint64_t header_len = static_cast<uint64_t>(nul - bytes);
  const size_t data_len = nul == bytes + size ? 0 : static_cast<size_t>(bytes + size - nul - 1);
  // Exactly sized (not a vector with spare capacity) so ASan flags any read past the end.
  const size_t image_size = 8 + header_len + data_len;
  const auto image = std::make_unique<std::byte[]>(image_size);
  for (int i = 0; i < 8; ++i) image[i] = static_cast<std::byte>(header_len >> (8 * i));
  std::copy(bytes, nul, image.get() + 8);
  if (data_len) std::copy(nul + 1, bytes + size, image.get() + 8 + header_len);
  parse_image(image.get(), image_size);
  return 0;
}
