// Qwen3.5 as a declaration over the shared modules: which tensors feed which module, and
// the order in which the modules run. See spec/qwen35.md sections 2 and 3.
#include "qwen35_model.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/kv_cache.h"
#include "hostlm/modules.h"
#include "qwen35_weights.h"

namespace hostlm::qwen35 {
namespace {

using modules::GatedAttention;
using modules::GatedDeltaNet;
using modules::MoeMlp;
using modules::RmsNorm;
using modules::SwigluMlp;

struct Layer {
  RmsNorm attn_norm, post_attention_norm;
  std::variant<GatedAttention, GatedDeltaNet> mixer;
  std::variant<SwigluMlp, MoeMlp> mlp;  // dense (qwen35) or mixture of experts (qwen35moe)
  int64_t cache_slot = 0;               // index among layers of the same kind
};

class Qwen35Model final : public Model {
 public:
  Qwen35Model(const ModelFiles& files, Backend& backend, const LoadOptions& options)
      : backend_(backend), weights_(files) {
    const Config& c = weights_.config();
    const int64_t H = c.hidden;
    info_.architecture = c.gguf_architecture();
    if (c.moe() && !backend_.runs_experts())
      throw BackendUnsupported(weights_.where() + ": the " + backend_.name() +
                               " backend does not run mixture-of-experts (qwen35moe) blocks");
    info_.n_vocab = c.n_vocab;
    info_.n_ctx_train = c.n_ctx_train;
    info_.n_layers = c.n_layers;

    backend_.expect_batch_tokens(std::max<int64_t>(1, options.max_batch));
    if (options.host_backend != nullptr) {
      if (options.gpu_layers >= 0 && options.gpu_layers < c.n_layers)
        host_layers_ = c.n_layers - options.gpu_layers;
      if (c.moe() && options.cpu_moe_layers != 0)
        host_moe_layers_ = options.cpu_moe_layers < 0
                               ? c.n_layers
                               : std::min<int64_t>(options.cpu_moe_layers, c.n_layers);
      host_moe_layers_ = std::max(host_moe_layers_, host_layers_);
      if (host_moe_layers_ > 0) host_ = options.host_backend;
      info_.host_layers = host_layers_;
      info_.host_moe_layers = host_moe_layers_ - host_layers_;
    }
    auto linear_on = [&](Backend& b, const std::string& name, int64_t rows, int64_t cols) {
      const TensorView view = weights_.require(name, {rows, cols});
      info_.weight_bytes += view.nbytes;
      if (&b != &backend_) info_.host_weight_bytes += view.nbytes;
      return b.load_weight(view);
    };
    auto device_linear = [&](const std::string& name, int64_t rows, int64_t cols) {
      return linear_on(backend_, name, rows, cols);
    };
    auto host_f32 = [&](const std::string& name, std::vector<int64_t> shape) {
      std::vector<float> values = weights_.require_f32(name, std::move(shape));
      info_.weight_bytes += values.size() * sizeof(float);
      return values;
    };
    auto norm = [&](const std::string& name, int64_t n) {
      return RmsNorm{host_f32(name, {n}), c.eps};
    };
    auto blk = [](int64_t i, const char* name) { return "blk." + std::to_string(i) + "." + name; };

    // Split: the embedding runs with the first layers, on the host (a tied table is held
    // twice, there and as the output head); otherwise an untied table may stay in host memory.
    if (host_layers_ > 0) {
      token_embd_ = linear_on(*host_, "token_embd.weight", c.n_vocab, H);
    } else if (c.tied) {
      token_embd_ = device_linear("token_embd.weight", c.n_vocab, H);
    } else {
      const TensorView view = weights_.require("token_embd.weight", {c.n_vocab, H});
      info_.weight_bytes += view.nbytes;
      token_embd_ = backend_.load_embedding_table(view);
    }
    output_norm_ = norm("output_norm.weight", H);
    if (!c.tied)
      output_ = device_linear("output.weight", c.n_vocab, H);
    else
      output_ = host_layers_ > 0 ? device_linear("token_embd.weight", c.n_vocab, H) : token_embd_;

    int64_t n_attention = 0, n_deltanet = 0;
    for (int64_t i = 0; i < c.n_layers; ++i) {
      Backend& lb = i < host_layers_ ? *host_ : backend_;
      auto linear = [&](const std::string& name, int64_t rows, int64_t cols) {
        return linear_on(lb, name, rows, cols);
      };
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
        kv_backends_.push_back(&lb);
      } else {
        GatedDeltaNet d;
        d.shape = {c.n_k_heads, c.n_v_heads, c.dk, c.dv, options.recurrent_state};
        d.conv_kernel = c.conv_kernel;
        d.w_qkv = linear(blk(i, "attn_qkv.weight"), c.conv_channels(), H);
        d.w_z = linear(blk(i, "attn_gate.weight"), c.value_dim(), H);
        d.w_beta = linear(blk(i, "ssm_beta.weight"), c.n_v_heads, H);
        d.w_alpha = linear(blk(i, "ssm_alpha.weight"), c.n_v_heads, H);
        d.conv_weight = host_f32(blk(i, "ssm_conv1d.weight"), {c.conv_channels(), c.conv_kernel});
        d.dt_bias = host_f32(blk(i, "ssm_dt.bias"), {c.n_v_heads});
        d.a_neg = host_f32(blk(i, "ssm_a"), {c.n_v_heads});
        for (float a : d.a_neg)
          if (!(a < 0.f))
            throw Error(weights_.where() + ": " + blk(i, "ssm_a") +
                        " holds a non-negative value; the file seems to store raw A_log");
        d.norm = norm(blk(i, "ssm_norm.weight"), c.dv);
        d.w_out = linear(blk(i, "ssm_out.weight"), H, c.value_dim());
        layout_.conv_state = d.conv_state_size();
        layout_.recurrent_state = d.recurrent_state_size();
        layout_.recurrent_type = d.shape.state;
        layer.mixer = std::move(d);
        layer.cache_slot = n_deltanet++;
        state_backends_.push_back(&lb);
      }
      if (c.moe())
        layer.mlp = load_moe(i, i < host_moe_layers_ ? *host_ : lb);
      else
        layer.mlp = SwigluMlp{linear(blk(i, "ffn_gate.weight"), c.ffn, H),
                              linear(blk(i, "ffn_up.weight"), c.ffn, H),
                              linear(blk(i, "ffn_down.weight"), H, c.ffn)};
      layers_.push_back(std::move(layer));
    }
    layout_.n_kv_layers = n_attention;
    layout_.n_head_kv = c.n_head_kv;
    layout_.head_dim = c.head_dim;
    layout_.n_state_layers = n_deltanet;

    max_batch_ = std::max<int64_t>(1, options.max_batch);
    const std::vector<int64_t> widths =
        modules::scratch_widths({c.n_head, c.n_head_kv, c.head_dim, c.conv_channels(),
                                 c.value_dim(), c.n_v_heads, c.widest_ffn()});
    scratch_ = std::make_unique<modules::Scratch>(backend_, max_batch_, widths);
    if (c.moe()) {
      moe_scratch_ = std::make_unique<modules::MoeScratch>(backend_, max_batch_, H, c.expert_ffn,
                                                           c.n_experts, c.n_experts_used);
      for (size_t i = static_cast<size_t>(host_moe_layers_); i < layers_.size(); ++i)
        moe_scratch_->prepare(backend_, std::get<MoeMlp>(layers_[i].mlp));
      if (host_moe_layers_ < c.n_layers) moe_ = &std::get<MoeMlp>(layers_.back().mlp);
    }
    hidden_ = backend_.alloc(static_cast<size_t>(max_batch_ * H));
    normed_ = backend_.alloc(static_cast<size_t>(max_batch_ * H));
    mixed_ = backend_.alloc(static_cast<size_t>(max_batch_ * H));
    if (host_ != nullptr) {
      host_scratch_ = std::make_unique<modules::Scratch>(*host_, max_batch_, widths);
      if (c.moe())
        host_moe_scratch_ = std::make_unique<modules::MoeScratch>(
            *host_, max_batch_, H, c.expert_ffn, c.n_experts, c.n_experts_used);
      host_hidden_ = host_->alloc(static_cast<size_t>(max_batch_ * H));
      host_normed_ = host_->alloc(static_cast<size_t>(max_batch_ * H));
      host_mixed_ = host_->alloc(static_cast<size_t>(max_batch_ * H));
    }
    // Room for a whole decode step's logits, up to kMaxLogitRows (64 x 248,320 floats is
    // 64 MiB): one row per sequence decoded together when the caller says how many, else
    // kLogitRows or more; project_logits works through any count in pieces of this.
    logit_capacity_ = options.max_sequences > 0
                          ? std::clamp<int64_t>(options.max_sequences, 1, kMaxLogitRows)
                          : std::clamp<int64_t>(max_batch_, kLogitRows, kMaxLogitRows);
    logits_ = backend_.alloc(static_cast<size_t>(logit_capacity_ * c.n_vocab));
    logit_rows_.reserve(static_cast<size_t>(max_batch_));
    logit_dst_.reserve(static_cast<size_t>(max_batch_));
    best_values_dst_.reserve(static_cast<size_t>(max_batch_));
    best_ids_dst_.reserve(static_cast<size_t>(max_batch_));
    best_k_.reserve(static_cast<size_t>(max_batch_));
    positions_.resize(static_cast<size_t>(max_batch_));
    batch_tokens_.resize(static_cast<size_t>(max_batch_));
    slices_.reserve(static_cast<size_t>(max_batch_));
    paged_.reserve(static_cast<size_t>(max_batch_));
    info_.scratch_bytes =
        sizeof(float) * static_cast<size_t>(scratch_->floats() + 3 * max_batch_ * H +
                                            logit_capacity_ * c.n_vocab +
                                            (moe_scratch_ ? moe_scratch_->floats() : 0)) +
        (moe_scratch_ ? moe_scratch_->combined_bytes() : 0);
    info_.description = std::string(c.moe() ? "Qwen3.5-MoE: " : "Qwen3.5: ") +
                        std::to_string(c.n_layers) + " layers (" + std::to_string(n_attention) +
                        " attention, " + std::to_string(n_deltanet) + " Gated DeltaNet), hidden " +
                        std::to_string(H) + ", vocab " + std::to_string(c.n_vocab) +
                        (c.tied ? ", tied embeddings" : "");
    if (c.moe())
      info_.description +=
          ", " + std::to_string(c.n_experts) + " experts (" + std::to_string(c.n_experts_used) +
          " per token) of width " + std::to_string(c.expert_ffn) +
          (c.shared_ffn > 0 ? " + a shared expert of " + std::to_string(c.shared_ffn)
                            : std::string());
  }

  // Layer i's router, experts (each a slice of the stacked tensors) and shared expert.
  MoeMlp load_moe(int64_t i, Backend& b) {
    const Config& c = weights_.config();
    const int64_t H = c.hidden;
    const std::string layer = "blk." + std::to_string(i) + ".";
    auto count = [&](const TensorView& v) {
      info_.weight_bytes += v.nbytes;
      if (&b != &backend_) info_.host_weight_bytes += v.nbytes;
    };
    auto linear = [&](const std::string& name, int64_t rows, int64_t cols) {
      const TensorView& v = weights_.require(layer + name, {rows, cols});
      count(v);
      return b.load_weight(v);
    };
    MoeMlp moe;
    moe.n_used = c.n_experts_used;
    moe.router = linear("ffn_gate_inp.weight", c.n_experts, H);
    for (auto [name, rows, cols, out] :
         {std::tuple{"ffn_gate_exps.weight", c.expert_ffn, H, &moe.gates},
          {"ffn_up_exps.weight", c.expert_ffn, H, &moe.ups},
          {"ffn_down_exps.weight", H, c.expert_ffn, &moe.downs}}) {
      const TensorView& all = weights_.require(layer + name, {c.n_experts, rows, cols});
      count(all);
      const size_t bytes = all.nbytes / static_cast<size_t>(c.n_experts);
      for (int64_t e = 0; e < c.n_experts; ++e) {
        TensorView one = all;
        one.name = all.name + "[expert " + std::to_string(e) + "]";
        one.shape = {rows, cols};
        one.data = static_cast<const uint8_t*>(all.data) + static_cast<size_t>(e) * bytes;
        one.nbytes = bytes;
        out->push_back(b.load_weight(one));
      }
    }
    if (c.shared_ffn > 0) {
      moe.has_shared = true;
      moe.shared = SwigluMlp{linear("ffn_gate_shexp.weight", c.shared_ffn, H),
                             linear("ffn_up_shexp.weight", c.shared_ffn, H),
                             linear("ffn_down_shexp.weight", H, c.shared_ffn)};
      // Stored as [1, H] (transformers, llama.cpp's converter) or as [H].
      const std::string gate = layer + "ffn_gate_inp_shexp.weight";
      const TensorView* v = weights_.find(gate);
      TensorView row = v != nullptr && v->n_elements() == H ? *v : weights_.require(gate, {1, H});
      row.shape = {1, H};
      count(row);
      moe.shared_gate = b.load_weight(row);
    }
    return moe;
  }

  const ModelInfo& info() const override { return info_; }

  std::unique_ptr<Sequence> new_sequence(int64_t capacity) override {
    return KvSequence::standalone(CachePlacement{kv_backends_, state_backends_}, layout_, capacity,
                                  DType::F32);
  }

  CacheLayout cache_layout() const override { return layout_; }
  Backend* backend() override { return &backend_; }
  Backend* kv_layer_backend(int64_t kv_layer) override {
    return kv_backends_.at(static_cast<size_t>(kv_layer));
  }
  Backend* state_layer_backend(int64_t state_layer) override {
    return state_backends_.at(static_cast<size_t>(state_layer));
  }

  int64_t max_batch_tokens() const override { return max_batch_; }
  bool writes_best_logits() const override { return true; }

  int64_t embedding_size() const override { return weights_.config().hidden; }

  // The trunk's output rows, normed as the logits see them, copied out instead of projected.
  void eval_hidden(Sequence& seq, std::span<const int32_t> tokens,
                   std::span<float> hidden) override {
    const int64_t H = weights_.config().hidden;
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (hidden.size() < static_cast<size_t>(n * H)) throw Error("hidden-state buffer too small");
    for (int64_t begin = 0; begin < n; begin += max_batch_) {
      const int64_t T = std::min(max_batch_, n - begin);
      BatchItem item;
      item.seq = &seq;
      item.tokens = tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(T));
      eval_batch(std::span<const BatchItem>(&item, 1));
      output_norm_.forward(backend_, hidden_->data(), normed_->data(), T);
      backend_.download(hidden.data() + begin * H, normed_->data(), static_cast<size_t>(T * H));
    }
  }

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
      if (all_logits)
        item.logits = logits.subspan(static_cast<size_t>(begin * V));
      else if (begin + T == n)
        item.logits = logits;
      eval_batch(std::span<const BatchItem>(&item, 1));
    }
  }

  void eval_batch(std::span<const BatchItem> items) override {
    const int64_t V = info_.n_vocab;
    int64_t total = 0;
    for (const BatchItem& item : items) {
      KvSequence& seq = own_sequence(item.seq);
      const int64_t T = static_cast<int64_t>(item.tokens.size());
      if (T == 0) throw Error("no tokens to evaluate");
      if (seq.n_past() + T > seq.capacity())
        throw Error("sequence is full: " + std::to_string(seq.n_past()) + " + " +
                    std::to_string(T) + " tokens exceed its capacity of " +
                    std::to_string(seq.capacity()));
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
      const auto& seq = static_cast<const KvSequence&>(*item.seq);
      for (size_t t = 0; t < item.tokens.size(); ++t) {
        batch_tokens_[row] = item.tokens[t];
        positions_[row++] = static_cast<int32_t>(seq.n_past() + static_cast<int64_t>(t));
      }
    }
    for (const BatchItem& item : items)
      static_cast<KvSequence&>(*item.seq).prepare_append(static_cast<int64_t>(item.tokens.size()));
    // A decode step (one token per sequence, last-position logits) is launch-bound: it may
    // run as one recorded unit (Backend::begin_step), ended before the logits download.
    // A mixture-of-experts block waits for the host unless the backend routes (MoeMlp) and
    // runs it (one of a device layer on the host backend crosses over and back).
    const bool decode = host_moe_layers_ == host_layers_ &&
                        (!moe_ || moe_->routes_on_backend(backend_, total)) &&
                        std::all_of(items.begin(), items.end(), [](const BatchItem& item) {
                          return item.tokens.size() == 1 && !item.all_logits;
                        });
    // The host layers of a split model run once, before the device's step: a replayed step
    // that turns out to differ runs again, and their states must not advance twice.
    if (host_layers_ > 0) forward_host_layers(items, total);
    // A decode step whose logits come back in one piece waits for them only after the next
    // step's pass has been made ahead (walk_ahead); when that step comes as predicted, it
    // launches at once.
    finish_later_ = decode && host_layers_ == 0 && total <= logit_capacity_;
    bool ran = finish_later_ && ahead_matches(items) &&
               backend_.launch_ahead(
                   std::span<const int32_t>(batch_tokens_.data(), static_cast<size_t>(total)));
    ahead_items_.clear();
    // A backend replaying its last recorded step may find at end_step that this step differs
    // and ran nothing (Backend::end_step); the second pass is recorded afresh and runs.
    for (int pass = 0; !ran; ++pass) {
      graph_step_ = decode;
      if (graph_step_) backend_.begin_step();
      try {
        ran = forward_and_project(items, total);
      } catch (...) {
        if (graph_step_) backend_.abort_step();
        graph_step_ = false;
        finish_later_ = false;
        throw;
      }
      if (!ran && pass > 0) throw Error("the backend ran no recorded step twice in a row");
    }
    for (const BatchItem& item : items)
      static_cast<KvSequence&>(*item.seq).advance(static_cast<int64_t>(item.tokens.size()));
    if (finish_later_) {
      finish_later_ = false;
      const bool direct = direct_logits_;  // the pass ahead sets it again, alike
      walk_ahead(items, total);
      if (direct)
        backend_.wait_host_writes();
      else if (!logit_rows_.empty())
        fetch_logit_rows(0, logit_rows_.size());
    }
  }

 private:
  static constexpr int64_t kLogitRows = 16, kMaxLogitRows = 64;

  // The next decode step of the same sequences, one token each, as eval_batch would issue it
  // (Backend::begin_step_ahead), made while this one runs. Its token ids are not known yet:
  // this step's stand in for them. The step's pages are prepared now, as eval_batch would
  // first (a page more, or a shared page copied, goes with the sequence if no step follows).
  void walk_ahead(std::span<const BatchItem> items, int64_t total) {
    ahead_items_.clear();
    if (!backend_.offers_steps_ahead()) return;
    int64_t row = 0;
    for (const BatchItem& item : items) {
      auto& seq = static_cast<KvSequence&>(*item.seq);
      const int64_t n_past = seq.n_past();
      if (n_past + 1 > seq.capacity()) return;
      try {
        seq.prepare_append(1);
      } catch (const Error&) {
        return;  // no page left: the step itself, if it comes, reports it
      }
      const int32_t page = seq.pages()[static_cast<size_t>(n_past / kKvPageTokens)];
      positions_[row++] = static_cast<int32_t>(n_past);
      ahead_items_.push_back({&seq, seq.pages().data(), seq.pages().size(), n_past, page,
                              seq.state_slot(), item.logits.data(), item.logits.size(),
                              item.best_values.data(), item.best_values.size(),
                              item.best_ids.data()});
    }
    graph_step_ = true;
    if (!backend_.begin_step_ahead()) {
      graph_step_ = false;
      ahead_items_.clear();
      return;
    }
    finish_later_ = true;
    bool held = false;
    try {
      held = forward_and_project(items, total);
    } catch (const std::exception&) {
      // Nothing ran; the step itself, when it comes, makes its own pass and reports.
      if (graph_step_) backend_.abort_step();
    }
    graph_step_ = false;
    finish_later_ = false;
    if (!held) ahead_items_.clear();
  }

  // Whether this step is the one walk_ahead predicted (after prepare_append, which then
  // changed nothing in the pages it saw).
  bool ahead_matches(std::span<const BatchItem> items) const {
    if (ahead_items_.empty() || ahead_items_.size() != items.size()) return false;
    for (size_t i = 0; i < items.size(); ++i) {
      const BatchItem& item = items[i];
      const AheadItem& a = ahead_items_[i];
      const auto* seq = static_cast<const KvSequence*>(item.seq);
      if (seq != a.seq || seq->pages().data() != a.pages || seq->pages().size() != a.n_pages ||
          seq->n_past() != a.n_past || seq->state_slot() != a.state_slot ||
          seq->pages()[static_cast<size_t>(a.n_past / kKvPageTokens)] != a.page ||
          item.logits.data() != a.logits || item.logits.size() != a.logits_size ||
          item.best_values.data() != a.best_values || item.best_values.size() != a.best_k ||
          item.best_ids.data() != a.best_ids)
        return false;
    }
    return true;
  }

  // False when the backend ran nothing (a replay that did not match; see eval_batch).
  bool forward_and_project(std::span<const BatchItem> items, int64_t total) {
    forward_batch(items, total);
    // Items that want every position's logits project their rows as they lie; the others'
    // last rows are gathered and projected together, so a decode step of N sequences reads
    // the output head once, not N times, and waits for one download.
    int64_t row = 0;
    logit_rows_.clear();
    logit_dst_.clear();
    best_values_dst_.clear();
    best_ids_dst_.clear();
    best_k_.clear();
    for (const BatchItem& item : items) {
      const int64_t T = static_cast<int64_t>(item.tokens.size());
      const bool best = !item.all_logits && !item.best_values.empty();
      if (best && item.best_ids.size() != item.best_values.size())
        throw Error("Qwen3.5: a batch item asks for " + std::to_string(item.best_values.size()) +
                    " best logits with room for " + std::to_string(item.best_ids.size()) + " ids");
      if (!item.logits.empty() || best) {
        if (item.all_logits) {
          project_logits(row, T, item.logits.data());
        } else {
          logit_rows_.push_back(row + T - 1);
          logit_dst_.push_back(best ? nullptr : item.logits.data());
          best_values_dst_.push_back(best ? item.best_values.data() : nullptr);
          best_ids_dst_.push_back(best ? item.best_ids.data() : nullptr);
          best_k_.push_back(best ? item.best_values.size() : 0);
        }
      }
      row += T;
    }
    return project_gathered_logits() && end_graph_step();
  }

  bool end_graph_step() {
    if (!graph_step_) return true;
    graph_step_ = false;
    return backend_.end_step();
  }

  // Runs the gathered rows through the trunk's device layers (all of them unless split);
  // leaves the final hidden states in hidden_.
  void forward_batch(std::span<const BatchItem> items, int64_t T) {
    run_layers(backend_, *scratch_, hidden_->data(), normed_->data(), mixed_->data(),
               static_cast<size_t>(host_layers_), items, T);
  }

  // The first host_layers_ layers on the host backend; their output (the residual stream and
  // the next layer's normed input) is then copied to the device's buffers.
  void forward_host_layers(std::span<const BatchItem> items, int64_t T) {
    const auto n = static_cast<size_t>(T * weights_.config().hidden);
    run_layers(*host_, *host_scratch_, host_hidden_->data(), host_normed_->data(),
               host_mixed_->data(), 0, items, T, static_cast<size_t>(host_layers_));
    backend_.upload(hidden_->data(), host_hidden_->data(), n);
    backend_.upload(normed_->data(), host_normed_->data(), n);
  }

  // A device layer's mixture-of-experts block held on the host (cpu_moe_layers): its input
  // comes over, the host backend runs the block, its output goes back (the host layers'
  // buffers are free by then: their results were uploaded before the device's first layer).
  void forward_moe_on_host(const MoeMlp& moe, const float* a, int64_t T, float* m) {
    const auto n = static_cast<size_t>(T * weights_.config().hidden);
    backend_.download(host_normed_->data(), a, n);
    moe.forward(*host_, *host_scratch_, *host_moe_scratch_, host_normed_->data(), T,
                host_mixed_->data());
    backend_.upload(m, host_mixed_->data(), n);
  }

  // Layers [first, last) on `b` with its buffers h (residual stream), a (normed input), m.
  // Layer 0 starts from the embedding; the last layer of all ends with a plain residual add.
  void run_layers(Backend& b, modules::Scratch& scratch, float* h, float* a, float* m, size_t first,
                  std::span<const BatchItem> items, int64_t T, size_t last = SIZE_MAX) {
    const int64_t H = weights_.config().hidden;
    last = std::min(last, layers_.size());
    if (first == 0) {
      b.embed(token_embd_, batch_tokens_.data(), T, h);
      // Each residual add is fused with the norm that follows it (the next layer's input
      // norm after the MLP), so only the first layer norms on its own and the last adds alone.
      layers_.front().attn_norm.forward(b, h, a, T);
    }
    for (size_t li = first; li < last; ++li) {
      const Layer& layer = layers_[li];
      const bool attention = std::holds_alternative<GatedAttention>(layer.mixer);
      slices_.clear();  // capacity kept: no allocation per step
      paged_.clear();
      int64_t row = 0;
      for (const BatchItem& item : items) {
        auto& seq = static_cast<KvSequence&>(*item.seq);
        const int64_t n = static_cast<int64_t>(item.tokens.size());
        if (attention) {
          PagedSequence p;
          p.kv = seq.pool().layer(layer.cache_slot);
          p.pages = seq.pages().data();
          p.row = row;
          p.T = n;
          p.n_past = seq.n_past();
          paged_.push_back(p);
        } else {
          modules::SequenceSlice sl;
          sl.row = row;
          sl.T = n;
          sl.n_past = seq.n_past();
          sl.conv_state = seq.states().conv(seq.state_slot(), layer.cache_slot);
          sl.recurrent_state = seq.states().recurrent(seq.state_slot(), layer.cache_slot);
          slices_.push_back(sl);
        }
        row += n;
      }
      if (const auto* attn = std::get_if<GatedAttention>(&layer.mixer))
        attn->forward(b, scratch, a, T, positions_.data(), paged_, m);
      else
        std::get<GatedDeltaNet>(layer.mixer).forward(b, scratch, a, T, slices_, m);
      const RmsNorm& post = layer.post_attention_norm;
      b.add_rms_norm(h, m, T, H, post.weight.data(), post.eps, a);
      if (const auto* dense = std::get_if<SwigluMlp>(&layer.mlp))
        dense->forward(b, scratch, a, T, m);
      else if (&b == &backend_ && static_cast<int64_t>(li) < host_moe_layers_)
        forward_moe_on_host(std::get<MoeMlp>(layer.mlp), a, T, m);
      else
        std::get<MoeMlp>(layer.mlp).forward(
            b, scratch, &b == host_ ? *host_moe_scratch_ : *moe_scratch_, a, T, m);
      if (li + 1 == layers_.size()) {
        b.add(h, m, static_cast<size_t>(T * H));
      } else {
        const RmsNorm& next = layers_[li + 1].attn_norm;
        b.add_rms_norm(h, m, T, H, next.weight.data(), next.eps, a);
      }
    }
  }

  // The sequence as this model's paged kind, or an error naming the mix-up.
  KvSequence& own_sequence(Sequence* seq) const {
    auto* own = dynamic_cast<KvSequence*>(seq);
    if (!own) throw Error("Qwen3.5: the sequence was not made by a paged-cache model");
    if (!(own->pool().layout() == layout_))
      throw Error("Qwen3.5: the sequence was made for a model of another shape");
    return *own;
  }

  // Logits of rows [first, first + count) of the last batch, into host memory.
  void project_logits(int64_t first, int64_t count, float* out) {
    const int64_t H = weights_.config().hidden, V = info_.n_vocab;
    for (int64_t r = 0; r < count; r += logit_capacity_) {
      const int64_t rows = std::min(logit_capacity_, count - r);
      output_norm_.forward(backend_, hidden_->data() + (first + r) * H, normed_->data(), rows);
      backend_.matmul(output_, normed_->data(), rows, logits_->data());
      backend_.download(out + r * V, logits_->data(), static_cast<size_t>(rows * V));
    }
  }

  // Logits of the rows in logit_rows_ (ascending) into the host arrays logit_dst_, or their
  // best few into best_values_dst_ and best_ids_dst_: normed, projected and fetched
  // logit_capacity_ rows at a time.
  bool project_gathered_logits() {
    const int64_t H = weights_.config().hidden;
    const auto n = static_cast<int64_t>(logit_rows_.size());
    direct_logits_ = false;
    if (n == 0) return true;
    // Rows that already lie together (a decode step of one or more sequences) are read in
    // place; others are first gathered into mixed_, free once the trunk is done.
    const float* gathered = hidden_->data() + logit_rows_.front() * H;
    if (logit_rows_.back() - logit_rows_.front() + 1 != n) {
      float* rows_out = mixed_->data();
      for (int64_t i = 0; i < n;) {
        int64_t run = 1;
        while (i + run < n && logit_rows_[i + run] == logit_rows_[i] + run) ++run;
        backend_.copy_rows(rows_out + i * H, H, hidden_->data() + logit_rows_[i] * H, H, run, H);
        i += run;
      }
      gathered = rows_out;
    }
    for (int64_t first = 0; first < n; first += logit_capacity_) {
      const int64_t rows = std::min(logit_capacity_, n - first);
      output_norm_.forward(backend_, gathered + first * H, normed_->data(), rows);
      // One whole row (a single sequence's decode step): the product may write it straight
      // into the caller's array, with no download after it (Backend::matmul_to_host).
      const auto f = static_cast<size_t>(first);
      direct_logits_ = rows == 1 && best_k_[f] == 0 && logit_dst_[f] != nullptr &&
                       backend_.matmul_to_host(output_, normed_->data(), logit_dst_[f]);
      if (!direct_logits_) backend_.matmul(output_, normed_->data(), rows, logits_->data());
      // The recorded step runs before its logits come back.
      if (!end_graph_step()) return false;
      if (finish_later_) return true;  // eval_batch waits for them
      if (direct_logits_)
        backend_.wait_host_writes();
      else
        fetch_logit_rows(static_cast<size_t>(first), static_cast<size_t>(rows));
    }
    return true;
  }

  // Gathered rows [first, first + rows), projected into logits_, to their destinations: whole
  // rows or their best few (BatchItem::best_values). A step's rows usually all want the same,
  // and go in one call.
  void fetch_logit_rows(size_t first, size_t rows) {
    const auto V = static_cast<size_t>(info_.n_vocab);
    const auto at = [&](auto& v) { return std::span(v).subspan(first, rows); };
    const auto ks = at(best_k_);
    const bool all_whole = std::all_of(ks.begin(), ks.end(), [](size_t k) { return k == 0; });
    const bool all_same_best = ks.front() > 0 && std::all_of(ks.begin(), ks.end(), [&](size_t k) {
                                 return k == ks.front();
                               });
    if (all_whole) {
      backend_.download_rows(at(logit_dst_), logits_->data(), V);
    } else if (all_same_best) {
      backend_.best_logits_rows(at(best_values_dst_), at(best_ids_dst_), logits_->data(), V,
                                ks.front());
    } else {
      // Mixed: whole rows one by one, and the best of every row in one call at the largest k
      // asked (a row's best k are the first k of its best k_max), copied out per row.
      const size_t k_max = *std::max_element(ks.begin(), ks.end());
      if (k_max > 0) {
        mixed_values_.resize(rows * k_max);
        mixed_ids_.resize(rows * k_max);
        mixed_value_rows_.resize(rows);
        mixed_id_rows_.resize(rows);
        for (size_t r = 0; r < rows; ++r) {
          mixed_value_rows_[r] = mixed_values_.data() + r * k_max;
          mixed_id_rows_[r] = mixed_ids_.data() + r * k_max;
        }
        backend_.best_logits_rows(mixed_value_rows_, mixed_id_rows_, logits_->data(), V, k_max);
      }
      for (size_t r = 0; r < rows; ++r) {
        const size_t i = first + r, k = best_k_[i];
        if (k == 0) {
          backend_.download(logit_dst_[i], logits_->data() + r * V, V);
        } else {
          std::copy_n(mixed_value_rows_[r], k, best_values_dst_[i]);
          std::copy_n(mixed_id_rows_[r], k, best_ids_dst_[i]);
        }
      }
    }
  }

  // fetch_logit_rows of a step whose rows want different numbers of best logits.
  std::vector<float> mixed_values_;
  std::vector<int32_t> mixed_ids_;
  std::vector<float*> mixed_value_rows_;
  std::vector<int32_t*> mixed_id_rows_;
  Backend& backend_;
  // A split model's host backend: layers [0, host_layers_), and the mixture-of-experts
  // blocks of layers [0, host_moe_layers_) (at least host_layers_).
  Backend* host_ = nullptr;
  int64_t host_layers_ = 0, host_moe_layers_ = 0;
  std::vector<Backend*> kv_backends_, state_backends_;  // per cache layer
  WeightSource weights_;
  ModelInfo info_;
  Weight token_embd_, output_;
  RmsNorm output_norm_;
  std::vector<Layer> layers_;
  CacheLayout layout_;
  int64_t max_batch_ = 1;
  std::unique_ptr<modules::Scratch> scratch_, host_scratch_;
  std::unique_ptr<modules::MoeScratch> moe_scratch_, host_moe_scratch_;  // qwen35moe only
  std::unique_ptr<Buffer> hidden_, normed_, mixed_, logits_;
  std::unique_ptr<Buffer> host_hidden_, host_normed_, host_mixed_;
  std::vector<int32_t> positions_, batch_tokens_;
  std::vector<modules::SequenceSlice> slices_;
  std::vector<PagedSequence> paged_;
  int64_t logit_capacity_ = kLogitRows;  // rows logits_ holds
  bool graph_step_ = false;              // between begin_step and end_step
  const MoeMlp* moe_ = nullptr;          // a device layer's block, if the model has experts
  bool finish_later_ = false;            // the step's logits are waited for after walk_ahead
  bool direct_logits_ = false;           // the last projection wrote them to host memory
  // What the pass made ahead assumed of each sequence (walk_ahead); empty when none is held.
  struct AheadItem {
    const KvSequence* seq;
    const int32_t* pages;
    size_t n_pages;
    int64_t n_past;
    int32_t page, state_slot;
    const float* logits;
    size_t logits_size;
    const float* best_values;
    size_t best_k;
    const int32_t* best_ids;
  };
  std::vector<AheadItem> ahead_items_;
  std::vector<int64_t> logit_rows_;
  std::vector<float*> logit_dst_;  // null for rows that want their best logits only
  std::vector<float*> best_values_dst_;
  std::vector<int32_t*> best_ids_dst_;
  std::vector<size_t> best_k_;  // 0: the whole row
};

}  // namespace

std::unique_ptr<Model> load_model(const ModelFiles& files, Backend& backend,
                                  const LoadOptions& options) {
  return std::make_unique<Qwen35Model>(files, backend, options);
}

}  // namespace hostlm::qwen35
