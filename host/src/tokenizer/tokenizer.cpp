// Building the tokenizer from a spec, and encoding text.
#include "hostlm/tokenizer.h"

#include <algorithm>

#include "hostlm/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/nfc.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace hostlm {
namespace {

// The Qwen regexes are spec/qwen35.md 5.2; gpt2 is the ByteLevel pre-tokenizer's own.
constexpr std::string_view kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// HF's ByteLevel decoder maps a token's characters back to bytes only when every one of them
// is in the byte table; otherwise the token's own UTF-8 is emitted.
std::string decoded_bytes(std::string_view token) {
  if (!tok::is_valid_utf8(token)) return std::string(token);
  auto mapped = tok::ByteUnicode::get().decode(token);
  return mapped ? std::move(*mapped) : std::string(token);
}

}  // namespace

std::optional<std::string> builtin_pretokenizer_regex(std::string_view name) {
  if (name == "qwen35") return std::string(kQwen35Regex);
  if (name == "qwen2") return std::string(kQwen2Regex);
  if (name == "gpt2") return std::string(kGpt2Regex);
  return std::nullopt;
}

bool tok::looks_special(std::string_view t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wrapped("<unused", ">");
}

Tokenizer::Tokenizer(TokenizerSpec spec) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.spec = std::move(spec);
  TokenizerSpec& s = m.spec;

  int64_t n = static_cast<int64_t>(s.vocab.size());
  for (const AddedToken& t : s.added_tokens) {
    if (t.id < 0) throw Error("tokenizer: added token '" + t.content + "' has a negative id");
    if (t.content.empty())
      throw Error("tokenizer: added token " + std::to_string(t.id) + " is empty");
    if (!tok::is_valid_utf8(t.content)) {
      throw Error("tokenizer: added token " + std::to_string(t.id) + " is not valid UTF-8");
    }
    n = std::max<int64_t>(n, int64_t{t.id} + 1);
  }
  if (n > INT32_MAX) throw Error("tokenizer: too many tokens");
  m.bytes.resize(static_cast<size_t>(n));
  m.types.assign(static_cast<size_t>(n), TokenType::Unused);
  m.special.assign(static_cast<size_t>(n), 0);

  m.vocab_ids.reserve(s.vocab.size());
  for (size_t id = 0; id < s.vocab.size(); ++id) {
    if (s.vocab[id].empty()) continue;
    m.vocab_ids.emplace(s.vocab[id], static_cast<int32_t>(id));
    m.bytes[id] = decoded_bytes(s.vocab[id]);
    m.types[id] = TokenType::Normal;
  }
  for (AddedToken& t : s.added_tokens) {
    // A normalised added token is looked for in normalised text, so normalise it too.
    if (t.normalized && s.nfc) tok::nfc_normalize(std::string(t.content), t.content);
    m.added_ids.emplace(t.content, t.id);
    m.bytes[t.id] = decoded_bytes(t.content);
    m.types[t.id] =
        t.special || tok::looks_special(t.content) ? TokenType::Control : TokenType::UserDefined;
    m.special[t.id] = t.special;
  }
  std::vector<const AddedToken*> raw, normalized;
  for (const AddedToken& t : s.added_tokens) (t.normalized ? normalized : raw).push_back(&t);
  m.raw_matcher = tok::AddedTokenMatcher(std::move(raw));
  m.normalized_matcher = tok::AddedTokenMatcher(std::move(normalized));

  for (const auto* id : {&s.bos_id, &s.eos_id, &s.pad_id}) {
    if (*id && (**id < 0 || **id >= n)) {
      throw Error("tokenizer: special token id " + std::to_string(**id) + " is out of range");
    }
  }

  if (!s.pre.empty()) {
    auto regex = builtin_pretokenizer_regex(s.pre);
    if (!regex) {
      throw Error("tokenizer: unknown pre-tokenizer '" + s.pre + "' (known: qwen35, qwen2, gpt2)");
    }
    m.pre.emplace(std::vector<std::string>{*regex});
  } else {
    m.pre.emplace(s.pre_regexes);
  }

  const tok::ByteUnicode& bu = tok::ByteUnicode::get();
  std::array<int32_t, 256> byte_ids;
  for (int b = 0; b < 256; ++b) {
    const auto it = m.vocab_ids.find(bu.encode(static_cast<uint8_t>(b)));
    byte_ids[b] = it == m.vocab_ids.end() ? -1 : it->second;
  }
  std::vector<tok::Bpe::Merge> merges;
  merges.reserve(s.merges.size());
  auto vocab_id = [&](const std::string& token, size_t rank) {
    const auto it = m.vocab_ids.find(token);
    if (it == m.vocab_ids.end()) {
      throw Error("tokenizer: merge " + std::to_string(rank) + " uses '" + token +
                  "', which is not in the vocabulary");
    }
    return it->second;
  };
  for (size_t rank = 0; rank < s.merges.size(); ++rank) {
    const auto& [left, right] = s.merges[rank];
    merges.push_back({vocab_id(left, rank), vocab_id(right, rank), vocab_id(left + right, rank)});
  }
  m.bpe.emplace(byte_ids, merges);
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  const Impl& m = *impl_;
  std::string repaired;
  if (!tok::is_valid_utf8(text)) {
    tok::append_utf8_lossy(text, repaired, true);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (options.add_special_tokens && m.spec.add_bos && m.spec.bos_id) ids.push_back(*m.spec.bos_id);

  std::vector<tok::Segment> segments, normalized_segments;
  std::vector<std::string_view> pieces;
  std::string normalized;
  auto encode_plain = [&](std::string_view plain) {
    pieces.clear();
    m.pre->split(plain, pieces);
    for (std::string_view piece : pieces) m.bpe->encode(piece, ids);
  };

  m.raw_matcher.split(text, options.parse_special, segments);
  for (const tok::Segment& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    // HF normalises each stretch between added tokens on its own.
    std::string_view plain = seg.text;
    if (m.spec.nfc && tok::nfc_normalize(plain, normalized)) plain = normalized;
    if (m.normalized_matcher.empty()) {
      encode_plain(plain);
      continue;
    }
    normalized_segments.clear();
    m.normalized_matcher.split(plain, options.parse_special, normalized_segments);
    for (const tok::Segment& sub : normalized_segments) {
      if (sub.id >= 0) {
        ids.push_back(sub.id);
      } else {
        encode_plain(sub.text);
      }
    }
  }
  return ids;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->bytes.size()); }

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  const std::string key(token);
  if (auto it = impl_->added_ids.find(key); it != impl_->added_ids.end()) return it->second;
  if (auto it = impl_->vocab_ids.find(key); it != impl_->vocab_ids.end()) return it->second;
  return std::nullopt;
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->types.size()) return TokenType::Unused;
  return impl_->types[id];
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[id];
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->spec.bos_id; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->spec.eos_id; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->spec.pad_id; }
const TokenizerSpec& Tokenizer::spec() const { return impl_->spec; }

}  // namespace hostlm
