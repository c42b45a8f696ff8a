// Ids back to text: whole sequences, and one token at a time for streaming.
#include "hostlm/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace hostlm {

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  const Impl& m = *impl_;
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= m.bytes.size()) continue;
    if (skip_special && m.special[id]) continue;
    bytes += m.bytes[id];
  }
  std::string text;
  text.reserve(bytes.size());
  tok::append_utf8_lossy(bytes, text, true);
  return text;
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  static const std::string kNone;
  if (id < 0 || static_cast<size_t>(id) >= impl_->bytes.size()) return kNone;
  return impl_->bytes[id];
}

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(&tokenizer), skip_special_(skip_special) {}

std::string StreamingDecoder::push(int32_t id) {
  if (skip_special_ && tokenizer_->is_special(id)) return {};
  pending_ += tokenizer_->token_bytes(id);
  std::string text;
  pending_.erase(0, tok::append_utf8_lossy(pending_, text, false));
  return text;
}

std::string StreamingDecoder::finish() {
  std::string text;
  tok::append_utf8_lossy(pending_, text, true);
  pending_.clear();
  return text;
}

}  // namespace hostlm
