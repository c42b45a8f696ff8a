// Qwen3.5 as a declaration over the shared modules: which tensors feed which module, and
// the order in which the modules run. See spec/qwen35.md sections 2 and 3.
#include "qwen35_model.h"

#include <algorithm>
#include <cstring>
#include <variant>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/modules.h"
#include "qwen35_weights.h"

namespace hostlm::qwen35 {
namespace {

using modules::GatedAttention;
using modules::GatedDeltaNet;
using modules::RmsNorm;
using modules::SwigluMlp;

struct Layer {
  RmsNorm attn_norm, post_attention_norm;
  std::variant<GatedAttention, GatedDeltaNet> mixer;
  SwigluMlp mlp;
  int64_t cache_slot = 0;  // index among layers of the same kind
};

class Qwen35Sequence final : public Sequence {
 public:
  int64_t n_past() const override { return n_past_; }
  int64_t capacity() const override { return capacity_; }

  int64_t n_past_ = 0, capacity_ = 0;
  std::vector<std::unique_ptr<Buffer>> keys, values;           // per attention layer
  std::vector<std::unique_ptr<Buffer>> conv_states, recurrent_states;  // per DeltaNet layer
};

class Qwen35Model final : public Model {
 public:
  Qwen35Model(const ModelFiles& files, Backend& backend, const LoadOptions& options)
      : backend_(backend), weights_(files) {
    const Config& c = weights_.config();
    const int64_t H = c.hidden;
    info_.architecture = "qwen35";
    info_.n_vocab = c.n_vocab;
    info_.n_ctx_train = c.n_ctx_train;
    info_.n_layers = c.n_layers;

    auto linear = [&](const std::string& name, int64_t rows, int64_t cols) {
      return backend_.load_weight(weights_.require(name, {rows, cols}));
    };
    auto norm = [&](const std::string& name, int64_t n) {
      return RmsNorm{weights_.require_f32(name, {n}), c.eps};
    };
    auto blk = [](int64_t i, const char* name) { return "blk." + std::to_string(i) + "." + name; };

    token_embd_ = linear("token_embd.weight", c.n_vocab, H);
    output_norm_ = norm("output_norm.weight", H);
    output_ = c.tied ? token_embd_ : linear("output.weight", c.n_vocab, H);

    int64_t n_attention = 0, n_deltanet = 0;
    for (int64_t i = 0; i < c.n_layers; ++i) {
      Layer layer;
      layer.attn_norm = norm(blk(i, "attn_norm.weight"), H);
      layer.post_attention_norm = norm(blk(i, "post_attention_norm.weight"), H);
      if (c.full_attention[i]) {
        GatedAttention a;
        a.n_head = c.n_head;
        a.n_head_kv = c.n_head_kv;
        a.head_dim = c.head_dim;
        a.rot_dims = c.rot_dims;
        a.rope_theta = c.rope_theta;
        a.output_gate = true;
        a.wq = linear(blk(i, "attn_q.weight"), 2 * c.n_head * c.head_dim, H);
        a.wk = linear(blk(i, "attn_k.weight"), c.n_head_kv * c.head_dim, H);
        a.wv = linear(blk(i, "attn_v.weight"), c.n_head_kv * c.head_dim, H);
        a.wo = linear(blk(i, "attn_output.weight"), H, c.n_head * c.head_dim);
        a.q_norm = norm(blk(i, "attn_q_norm.weight"), c.head_dim);
        a.k_norm = norm(blk(i, "attn_k_norm.weight"), c.head_dim);
        layer.mixer = std::move(a);
        layer.cache_slot = n_attention++;
      } else {
        GatedDeltaNet d;
        d.shape = {c.n_k_heads, c.n_v_heads, c.dk, c.dv};
        d.conv_kernel = c.conv_kernel;
        d.w_qkv = linear(blk(i, "attn_qkv.weight"), c.conv_channels(), H);
        d.w_z = linear(blk(i, "attn_gate.weight"), c.value_dim(), H);
        d.w_beta = linear(blk(i, "ssm_beta.weight"), c.n_v_heads, H);
        d.w_alpha = linear(blk(i, "ssm_alpha.weight"), c.n_v_heads, H);
        d.conv_weight = weights_.require_f32(blk(i, "ssm_conv1d.weight"), {c.conv_channels(), c.conv_kernel});
        d.dt_bias = weights_.require_f32(blk(i, "ssm_dt.bias"), {c.n_v_heads});
        d.a_neg = weights_.require_f32(blk(i, "ssm_a"), {c.n_v_heads});
        for (float a : d.a_neg)
          if (!(a < 0.f))
            throw Error(weights_.where() + ": " + blk(i, "ssm_a") +
                        " holds a non-negative value; the file seems to store raw A_log");
        d.norm = norm(blk(i, "ssm_norm.weight"), c.dv);
        d.w_out = linear(blk(i, "ssm_out.weight"), H, c.value_dim());
        layer.mixer = std::move(d);
        layer.cache_slot = n_deltanet++;
      }
      layer.mlp = SwigluMlp{linear(blk(i, "ffn_gate.weight"), c.ffn, H),
                            linear(blk(i, "ffn_up.weight"), c.ffn, H),
                            linear(blk(i, "ffn_down.weight"), H, c.ffn)};
      layers_.push_back(std::move(layer));
    }
    n_attention_ = n_attention;
    n_deltanet_ = n_deltanet;

    max_batch_ = std::max<int64_t>(1, options.max_batch);
    const int64_t width = std::max({H, 2 * c.n_head * c.head_dim, c.conv_channels(),
                                    c.value_dim() + 2 * c.n_v_heads, c.ffn});
    scratch_ = std::make_unique<modules::Scratch>(backend_, max_batch_, width);
    hidden_ = backend_.alloc(static_cast<size_t>(max_batch_ * H));
    normed_ = backend_.alloc(static_cast<size_t>(max_batch_ * H));
    mixed_ = backend_.alloc(static_cast<size_t>(max_batch_ * H));
    logits_ = backend_.alloc(static_cast<size_t>(kLogitRows * c.n_vocab));
    positions_.resize(static_cast<size_t>(max_batch_));
    batch_tokens_.resize(static_cast<size_t>(max_batch_));
    slices_.reserve(static_cast<size_t>(max_batch_));
    info_.description = "Qwen3.5: " + std::to_string(c.n_layers) + " layers (" +
                        std::to_string(n_attention) + " attention, " + std::to_string(n_deltanet) +
                        " Gated DeltaNet), hidden " + std::to_string(H) + ", vocab " +
                        std::to_string(c.n_vocab) + (c.tied ? ", tied embeddings" : "");
  }

  const ModelInfo& info() const override { return info_; }

  std::unique_ptr<Sequence> new_sequence(int64_t capacity) override {
    const Config& c = weights_.config();
    auto seq = std::make_unique<Qwen35Sequence>();
    seq->capacity_ = capacity;
    const size_t kv = static_cast<size_t>(capacity * c.n_head_kv * c.head_dim);
    for (int64_t i = 0; i < n_attention_; ++i) {
      seq->keys.push_back(backend_.alloc(kv));
      seq->values.push_back(backend_.alloc(kv));
    }
    for (int64_t i = 0; i < n_deltanet_; ++i) {
      const GatedDeltaNet* d = nullptr;
      for (const Layer& l : layers_)
        if ((d = std::get_if<GatedDeltaNet>(&l.mixer))) break;
      seq->conv_states.push_back(backend_.alloc(static_cast<size_t>(d->conv_state_size())));
      seq->recurrent_states.push_back(backend_.alloc(static_cast<size_t>(d->recurrent_state_size())));
      backend_.fill(seq->conv_states.back()->data(), 0.f, seq->conv_states.back()->size());
      backend_.fill(seq->recurrent_states.back()->data(), 0.f, seq->recurrent_states.back()->size());
    }
    return seq;
  }

  int64_t max_batch_tokens() const override { return max_batch_; }

  void eval(Sequence& seq, std::span<const int32_t> tokens, bool all_logits,
            std::span<float> logits) override {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t V = info_.n_vocab;
    if (n == 0) throw Error("no tokens to evaluate");
    if (logits.size() < static_cast<size_t>(all_logits ? n * V : V))
      throw Error("logits buffer too small");
    for (int64_t begin = 0; begin < n; begin += max_batch_) {
      const int64_t T = std::min(max_batch_, n - begin);
      BatchItem item;
      item.seq = &seq;
      item.tokens = tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(T));
      item.all_logits = all_logits;
      if (all_logits) item.logits = logits.subspan(static_cast<size_t>(begin * V));
      else if (begin + T == n) item.logits = logits;
      eval_batch(std::span<const BatchItem>(&item, 1));
    }
  }

  void eval_batch(std::span<const BatchItem> items) override {
    const int64_t V = info_.n_vocab;
    int64_t total = 0;
    for (const BatchItem& item : items) {
      auto& seq = dynamic_cast<Qwen35Sequence&>(*item.seq);
      const int64_t T = static_cast<int64_t>(item.tokens.size());
      if (T == 0) throw Error("no tokens to evaluate");
      if (seq.n_past_ + T > seq.capacity_)
        throw Error("sequence is full: " + std::to_string(seq.n_past_) + " + " +
                    std::to_string(T) + " tokens exceed its capacity of " +
                    std::to_string(seq.capacity_));
      if (!item.logits.empty() &&
          item.logits.size() < static_cast<size_t>(item.all_logits ? T * V : V))
        throw Error("logits buffer too small");
      total += T;
    }
    if (total > max_batch_)
      throw Error("batch of " + std::to_string(total) + " tokens exceeds the model's limit of " +
                  std::to_string(max_batch_));
    // Rows are laid out item after item; tokens and positions are gathered once.
    int64_t row = 0;
    for (const BatchItem& item : items) {
      const auto& seq = static_cast<const Qwen35Sequence&>(*item.seq);
      for (size_t t = 0; t < item.tokens.size(); ++t) {
        batch_tokens_[row] = item.tokens[t];
        positions_[row++] = static_cast<int32_t>(seq.n_past_ + static_cast<int64_t>(t));
      }
    }
    forward_batch(items, total);
    row = 0;
    for (const BatchItem& item : items) {
      const int64_t T = static_cast<int64_t>(item.tokens.size());
      if (!item.logits.empty()) {
        if (item.all_logits) project_logits(row, T, item.logits.data());
        else project_logits(row + T - 1, 1, item.logits.data());
      }
      row += T;
    }
  }

 private:
  static constexpr int64_t kLogitRows = 16;

  // Runs the gathered rows through the trunk; leaves the final hidden states in hidden_.
  void forward_batch(std::span<const BatchItem> items, int64_t T) {
    const int64_t H = weights_.config().hidden;
    float* h = hidden_->data();
    float* a = normed_->data();
    float* m = mixed_->data();
    backend_.embed(token_embd_, batch_tokens_.data(), T, h);
    for (const Layer& layer : layers_) {
      slices_.clear();  // capacity kept: no allocation per step
      int64_t row = 0;
      for (const BatchItem& item : items) {
        auto& seq = static_cast<Qwen35Sequence&>(*item.seq);
        modules::SequenceSlice sl;
        sl.row = row;
        sl.T = static_cast<int64_t>(item.tokens.size());
        sl.n_past = seq.n_past_;
        if (std::holds_alternative<GatedAttention>(layer.mixer)) {
          sl.kv = {seq.keys[layer.cache_slot]->data(), seq.values[layer.cache_slot]->data()};
        } else {
          sl.conv_state = seq.conv_states[layer.cache_slot]->data();
          sl.recurrent_state = seq.recurrent_states[layer.cache_slot]->data();
        }
        slices_.push_back(sl);
        row += sl.T;
      }
      layer.attn_norm.forward(backend_, h, a, T);
      if (const auto* attn = std::get_if<GatedAttention>(&layer.mixer))
        attn->forward(backend_, *scratch_, a, T, positions_.data(), slices_, m);
      else
        std::get<GatedDeltaNet>(layer.mixer).forward(backend_, *scratch_, a, T, slices_, m);
      backend_.add(h, m, static_cast<size_t>(T * H));
      layer.post_attention_norm.forward(backend_, h, a, T);
      layer.mlp.forward(backend_, *scratch_, a, T, m);
      backend_.add(h, m, static_cast<size_t>(T * H));
    }
    for (const BatchItem& item : items)
      static_cast<Qwen35Sequence&>(*item.seq).n_past_ += static_cast<int64_t>(item.tokens.size());
  }

  // Logits of rows [first, first + count) of the last batch, into host memory.
  void project_logits(int64_t first, int64_t count, float* out) {
    const int64_t H = weights_.config().hidden, V = info_.n_vocab;
    for (int64_t r = 0; r < count; r += kLogitRows) {
      const int64_t rows = std::min(kLogitRows, count - r);
      output_norm_.forward(backend_, hidden_->data() + (first + r) * H, normed_->data(), rows);
      backend_.matmul(output_, normed_->data(), rows, logits_->data());
      backend_.download(out + r * V, logits_->data(), static_cast<size_t>(rows * V));
    }
  }

  Backend& backend_;
  WeightSource weights_;
  ModelInfo info_;
  Weight token_embd_, output_;
  RmsNorm output_norm_;
  std::vector<Layer> layers_;
  int64_t n_attention_ = 0, n_deltanet_ = 0, max_batch_ = 1;
  std::unique_ptr<modules::Scratch> scratch_;
  std::unique_ptr<Buffer> hidden_, normed_, mixed_, logits_;
  std::vector<int32_t> positions_, batch_tokens_;
  std::vector<modules::SequenceSlice> slices_;
};

}  // namespace

std::unique_ptr<Model> load_model(const ModelFiles& files, Backend& backend,
                                  const LoadOptions& options) {
  return std::make_unique<Qwen35Model>(files, backend, options);
}

}  // namespace hostlm::qwen35
