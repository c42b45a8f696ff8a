// Embeddings: the mean of the final hidden states of an input's tokens, L2-normalized (what
// Ollama and llama-server's mean pooling give for a generative model).
//
// The model belongs to its engine's scheduler thread, so the forward passes run there
// (Engine::run_exclusive), between two generation steps, each input in its own sequence.
#include <algorithm>
#include <cmath>

#include "serving/lease_state.h"

namespace hostlm {
namespace {

void normalize(std::vector<float>& v) {
  double sum = 0;
  for (const float x : v) sum += static_cast<double>(x) * x;
  const double norm = std::sqrt(sum);
  if (norm > 0)
    for (float& x : v) x = static_cast<float>(x / norm);
}

}  // namespace

ModelLease::Embeddings ModelLease::embed(const std::vector<std::string>& inputs, bool truncate,
                                         int dimensions) const {
  std::vector<std::vector<int32_t>> tokens;
  tokens.reserve(inputs.size());
  // Client text: special-token text inside it stays text.
  const Tokenizer::EncodeOptions plain{.parse_special = false, .add_special_tokens = true};
  for (const std::string& text : inputs) tokens.push_back(tokenizer().encode(text, plain));
  return embed_tokens(tokens, truncate, dimensions);
}

ModelLease::Embeddings ModelLease::embed_tokens(const std::vector<std::vector<int32_t>>& inputs,
                                                bool truncate, int dimensions) const {
  ServedModel& served = *state_->model;
  const int64_t width = served.model().embedding_size();
  if (width <= 0) throw InvalidRequest("model '" + spec().name + "' does not produce embeddings");
  const int64_t vocab = info().n_vocab;
  std::vector<std::vector<int32_t>> work = inputs;
  Embeddings out;
  for (size_t i = 0; i < work.size(); ++i) {
    auto& ids = work[i];
    if (ids.empty()) throw InvalidRequest("input " + std::to_string(i) + " has no tokens");
    for (const int32_t id : ids)
      if (id < 0 || id >= vocab)
        throw InvalidRequest("input " + std::to_string(i) + ": token id " + std::to_string(id) +
                             " is not in the vocabulary");
    if (static_cast<int64_t>(ids.size()) > context()) {
      if (!truncate)
        throw InvalidRequest("input " + std::to_string(i) + " is " + std::to_string(ids.size()) +
                             " tokens, more than the context of " + std::to_string(context()));
      ids.resize(static_cast<size_t>(context()));
    }
    out.prompt_tokens += static_cast<int64_t>(ids.size());
  }
  out.vectors.assign(work.size(), std::vector<float>(static_cast<size_t>(width), 0.f));
  served.engine().run_exclusive([&](Model& model) {
    const int64_t chunk = std::max<int64_t>(1, model.max_batch_tokens());
    std::vector<float> hidden;
    for (size_t i = 0; i < work.size(); ++i) {
      const std::span<const int32_t> ids(work[i]);
      auto seq = model.new_sequence(static_cast<int64_t>(ids.size()));
      std::vector<double> sum(static_cast<size_t>(width), 0.0);
      for (size_t begin = 0; begin < ids.size(); begin += static_cast<size_t>(chunk)) {
        const auto part =
            ids.subspan(begin, std::min(ids.size() - begin, static_cast<size_t>(chunk)));
        hidden.resize(part.size() * static_cast<size_t>(width));
        model.eval_hidden(*seq, part, hidden);
        for (size_t t = 0; t < part.size(); ++t)
          for (int64_t d = 0; d < width; ++d)
            sum[static_cast<size_t>(d)] +=
                hidden[t * static_cast<size_t>(width) + static_cast<size_t>(d)];
      }
      for (int64_t d = 0; d < width; ++d)
        out.vectors[i][static_cast<size_t>(d)] =
            static_cast<float>(sum[static_cast<size_t>(d)] / static_cast<double>(ids.size()));
    }
  });
  for (auto& v : out.vectors) {
    normalize(v);
    if (dimensions > 0 && dimensions < static_cast<int>(v.size())) {
      v.resize(static_cast<size_t>(dimensions));
      normalize(v);
    }
  }
  return out;
}

}  // namespace hostlm
