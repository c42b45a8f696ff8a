#include "gguf_info.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "hostlm/dtype.h"
#include "hostlm/gguf.h"
#include "hostlm/ollama/errors.h"

namespace hostlm::ollama {
namespace {

// llama.cpp's llama_ftype numbers (general.file_type) and their names.
std::string file_type_name(int64_t t) {
  static const char* names[] = {
      "F32",   "F16",     "Q4_0",   "Q4_1",   "Q4_1_F16", "Q4_2",    "Q4_3",   "Q8_0",   "Q5_0",
      "Q5_1",  "Q2_K",    "Q3_K_S", "Q3_K_M", "Q3_K_L",   "Q4_K_S",  "Q4_K_M", "Q5_K_S", "Q5_K_M",
      "Q6_K",  "IQ2_XXS", "IQ2_XS", "Q2_K_S", "IQ3_XS",   "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",
      "IQ3_M", "IQ2_S",   "IQ2_M",  "IQ4_XS", "IQ1_M",    "BF16"};
  if (t >= 0 && t < static_cast<int64_t>(std::size(names))) return names[t];
  return "unknown";
}

}  // namespace

std::string human_number(uint64_t n) {
  char buf[32];
  auto scaled = [&](double unit, const char* suffix, const char* frac) {
    const double v = static_cast<double>(n) / unit;
    if (v == std::floor(v)) {
      std::snprintf(buf, sizeof buf, "%.0f%s", v, suffix);
    } else {
      std::snprintf(buf, sizeof buf, frac, v, suffix);
    }
    return std::string(buf);
  };
  if (n >= 1000000000ull) return scaled(1e9, "B", "%.1f%s");
  if (n >= 1000000ull) return scaled(1e6, "M", "%.2f%s");
  if (n >= 1000ull) {
    std::snprintf(buf, sizeof buf, "%.0fK", static_cast<double>(n) / 1e3);
    return buf;
  }
  return std::to_string(n);
}

bool looks_like_gguf(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
}

GgufSummary summarize_gguf(const std::filesystem::path& path) {
  std::unique_ptr<GgufFile> f;
  try {
    f = GgufFile::open(path);
  } catch (const Error& e) {
    throw bad_request(std::string("supplied file was not in GGUF format (") + e.what() + ")");
  }
  GgufSummary s;
  try {
    s.architecture = f->get_string("general.architecture").value_or("");
    s.kind = f->get_string("general.type").value_or("model");
    for (const GgufTensorInfo& t : f->tensors()) {
      uint64_t n = 1;
      for (uint64_t d : t.ne) n *= d;
      s.parameter_count += n;
    }
    if (const auto ft = f->get_int("general.file_type")) {
      s.file_type = file_type_name(*ft);
    } else if (!f->tensors().empty()) {
      for (char c : dtype_name(f->tensors().front().type))
        s.file_type += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    const int64_t blocks = f->get_int(s.architecture + ".block_count").value_or(0);
    s.is_projector =
        s.kind == "projector" || s.kind == "mmproj" ||
        (blocks == 0 && f->get_int(s.architecture + ".vision.block_count").value_or(0) > 0) ||
        (s.architecture == "clip" && blocks == 0);
  } catch (const RequestError&) {
    throw;
  } catch (const Error& e) {
    throw bad_request(path.string() + ": " + e.what());
  }
  return s;
}

}  // namespace hostlm::ollama
