// Tokenizer::load: picks the loader from what the path is.
#include <fstream>

#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/tokenizer.h"

namespace hostlm {

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const auto json_path = path / "tokenizer.json";
    if (!std::filesystem::exists(json_path))
      throw Error(path.string() + ": no tokenizer.json in this folder");
    return from_hf_json(json_path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && std::string_view(magic, 4) == "GGUF") {
    return from_gguf(*GgufFile::open(path));
  }
  return from_hf_json(path);
}

}  // namespace hostlm
