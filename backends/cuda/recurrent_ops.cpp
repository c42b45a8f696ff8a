// CudaBackend's recurrent ops of the delta-rule layers: the causal conv1d + SiLU and the gated
// delta rule (per token, or chunked for long sequences; with the gated norm fused in for
// decode), over sequences in groups of one launch's table.
#include <algorithm>
#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "hostlm/error.h"

namespace hostlm::cuda {
namespace {

StateType state_type_of(DType type) {
  switch (type) {
    case DType::F32:
      return StateType::F32;
    case DType::F16:
      return StateType::F16;
    case DType::BF16:
      return StateType::BF16;
    default:
      throw Error("CUDA gated delta rule: a recurrent state cannot be stored as " +
                  std::string(dtype_name(type)) + " (f32, f16 or bf16)");
  }
}

}  // namespace

// With HOSTLM_CUDA_PROFILE=2, decode launches (one token a sequence) and prompt ones get rows
// of their own.
const char* CudaBackend::seqs_label(const char* op, std::span<const SequenceSlice> seqs) {
  if (!profile_->detailed()) return op;
  int64_t max_T = 0;
  for (const SequenceSlice& sl : seqs) max_T = std::max(max_T, sl.T);
  return profile_->label(op, max_T <= 1    ? "1 token a sequence"
                             : max_T <= 64 ? "2-64 tokens a sequence"
                                           : "over 64 tokens a sequence");
}

void CudaBackend::conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K,
                              const float* weight, float* conv_state, float* out) {
  const SequenceSlice one{0, T, 0, conv_state, nullptr};
  conv1d_silu_seqs({&one, 1}, x, channels, K, weight, out);
}

void CudaBackend::conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x,
                                   int64_t channels, int64_t K, const float* weight, float* out) {
  const auto timed = profile_->scope(seqs_label("conv1d_silu", seqs));
  forget_acts();
  if (K > kConvMaxKernel)
    throw Error("CUDA conv1d supports kernels up to " + std::to_string(kConvMaxKernel) +
                " taps, not " + std::to_string(K));
  const float* w = host_array(weight, static_cast<size_t>(channels * K));
  last_writes_.start(!quant_->folds_norms());
  for (const SequenceSlice& sl : seqs) {
    last_writes_.add(out + sl.row * channels, static_cast<size_t>(sl.T * channels));
    last_writes_.add(sl.conv_state, static_cast<size_t>((K - 1) * channels));
  }
  for_each_group(seqs, [&](const cuda::RecurrentSeqs& group, int64_t max_T) {
    if (skip_group(kConv, group, max_T, x, channels, K, w, out)) return;
    check(cuda::conv1d_silu(group, max_T, x, channels, K, w, out, stream_), "conv1d_silu");
  });
}

void CudaBackend::gated_delta_rule(const float* qkv, const float* alpha, const float* beta_raw,
                                   const float* a_neg, const float* dt_bias, int64_t T,
                                   const DeltaRuleShape& sh, float* state, float* out) {
  const SequenceSlice one{0, T, 0, nullptr, state};
  gated_delta_rule_seqs({&one, 1}, qkv, alpha, beta_raw, a_neg, dt_bias, sh, out);
}

void CudaBackend::gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                                        const float* alpha, const float* beta_raw,
                                        const float* a_neg, const float* dt_bias,
                                        const DeltaRuleShape& sh, float* out) {
  const auto timed = profile_->scope(seqs_label("gated_delta_rule", seqs));
  delta_rule(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh, nullptr, nullptr, 0.f, 0, out);
}

// Decode steps of up to kDeltaNormMaxSeqs sequences take the gated norm inside the delta
// rule's launch (delta_rule_can_norm); anything else runs the two ops. More sequences ran
// slower fused on the H200 (9B Q4_K_M engine bench, session 21: 32 streams -0.8%, 64 -2%),
// its blocks of a whole head leaving an SM idle at their barriers where four small blocks
// interleave; one stream gained 33 us a step.
void CudaBackend::gated_delta_rule_norm_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                                             const float* alpha, const float* beta_raw,
                                             const float* a_neg, const float* dt_bias,
                                             const DeltaRuleShape& sh, const float* z,
                                             const float* norm_weight, float eps, int64_t T,
                                             float* out) {
  int64_t max_T = 0;
  for (const SequenceSlice& sl : seqs) max_T = std::max(max_T, sl.T);
  if (!options_.delta_norm || seqs.size() > kDeltaNormMaxSeqs ||
      !cuda::delta_rule_can_norm(sh.dk, sh.dv, max_T)) {
    Backend::gated_delta_rule_norm_seqs(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh, z,
                                        norm_weight, eps, T, out);
    return;
  }
  const auto timed = profile_->scope("gated_delta_rule_norm");
  delta_rule(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh, z, norm_weight, eps, T, out);
}

// The delta rule's launches, with the gated norm in them when z is set (the caller checked
// delta_rule_can_norm; T: the rows of out).
void CudaBackend::delta_rule(std::span<const SequenceSlice> seqs, const float* qkv,
                             const float* alpha, const float* beta_raw, const float* a_neg,
                             const float* dt_bias, const DeltaRuleShape& sh, const float* z,
                             const float* norm_weight, float eps, int64_t T, float* out) {
  const size_t state_floats = static_cast<size_t>(sh.state_floats());
  const StateType state_type = state_type_of(sh.state);
  // The kernel reads the states before it waits for the kernel before when that kernel is
  // known not to have written them (a product or convolution of this layer's inputs).
  bool early_state = cuda::early_loads_enabled();
  for (const SequenceSlice& sl : seqs)
    early_state = early_state && last_writes_.untouched(sl.recurrent_state, state_floats);
  forget_acts();
  if (sh.dk > kDeltaRuleMaxDk)
    throw Error("CUDA gated delta rule supports key heads up to " +
                std::to_string(kDeltaRuleMaxDk) + " wide, not " + std::to_string(sh.dk));
  const float* a = host_array(a_neg, static_cast<size_t>(sh.n_v_heads));
  const float* dt = host_array(dt_bias, static_cast<size_t>(sh.n_v_heads));
  cuda::DeltaRuleNorm norm;
  if (z != nullptr) {
    norm.z = z;
    norm.weight = host_array(norm_weight, static_cast<size_t>(sh.dv));
    norm.eps = eps;
    norm.acts = quant_->produce_acts(out, T * sh.n_v_heads * sh.dv);
  }
  last_writes_.start(!quant_->folds_norms());
  for (const SequenceSlice& sl : seqs) {
    last_writes_.add(out + sl.row * sh.n_v_heads * sh.dv,
                     static_cast<size_t>(sl.T * sh.n_v_heads * sh.dv));
    last_writes_.add(sl.recurrent_state, state_floats);
  }
  const OpKind kind = z != nullptr ? kDeltaRuleNorm : kDeltaRule;
  for_each_group(seqs, [&](const cuda::RecurrentSeqs& all, int64_t max_T) {
    cuda::RecurrentSeqs group = all;
    if (z == nullptr && options_.chunked_min_tokens > 0 && max_T >= options_.chunked_min_tokens &&
        chunked_fits(sh.dk)) {
      cuda::RecurrentSeqs long_seqs;
      group.n = 0;
      for (int i = 0; i < all.n; ++i) {
        cuda::RecurrentSeqs& to = all.T[i] >= options_.chunked_min_tokens ? long_seqs : group;
        to.T[to.n] = all.T[i];
        to.row[to.n] = all.row[i];
        to.conv_state[to.n] = all.conv_state[i];
        to.state[to.n] = all.state[i];
        ++to.n;
      }
      delta_rule_chunked(long_seqs, qkv, alpha, beta_raw, a, dt, sh, state_type, out);
      if (group.n == 0) return;
    }
    if (z == nullptr && options_.delta_step16 && max_T == 1 &&
        cuda::delta_step16_fits(group, qkv, sh.n_k_heads, sh.n_v_heads, sh.dk, sh.dv, state_type)) {
      if (skip_group(kind, group, qkv, alpha, beta_raw, a, dt, sh.n_k_heads, sh.n_v_heads, sh.dk,
                     sh.dv, out, early_state, static_cast<int>(state_type), 16))
        return;
      check(cuda::gated_delta_step16(group, qkv, alpha, beta_raw, a, dt, sh.n_k_heads, sh.n_v_heads,
                                     sh.dk, sh.dv, out, early_state, state_type, stream_),
            "gated_delta_rule (16-bit state step)");
      return;
    }
    if (skip_group(kind, group, qkv, alpha, beta_raw, a, dt, sh.n_k_heads, sh.n_v_heads, sh.dk,
                   sh.dv, out, early_state, z, norm.weight, eps, norm.acts.q,
                   static_cast<int>(state_type)))
      return;
    check(cuda::gated_delta_rule(group, qkv, alpha, beta_raw, a, dt, sh.n_k_heads, sh.n_v_heads,
                                 sh.dk, sh.dv, out, early_state, stream_, norm, state_type),
          "gated_delta_rule");
  });
}

bool CudaBackend::chunked_fits(int64_t dk) {
  if (dk != chunked_fit_dk_) {
    chunked_fit_ = cuda::delta_chunked_fits(dk);
    chunked_fit_dk_ = dk;
  }
  return chunked_fit_;
}

// The chunked form for the sequences of `seqs` (all long), its per-chunk results in the
// prefill weight scratch: as much of it as is there already (the prefill products have
// grown it), and at least kChunkedScratchBytes or what the sequences need if less.
void CudaBackend::delta_rule_chunked(const cuda::RecurrentSeqs& seqs, const float* qkv,
                                     const float* alpha, const float* beta_raw, const float* a_neg,
                                     const float* dt_bias, const DeltaRuleShape& sh,
                                     StateType state_type, float* out) {
  const size_t slot_bytes = cuda::delta_chunked_slot_floats(sh.n_v_heads) * sizeof(float);
  size_t need = 0;
  const int64_t chunk = cuda::kDeltaChunkedTokens;
  for (int i = 0; i < seqs.n; ++i)
    need += static_cast<size_t>((seqs.T[i] + chunk - 1) / chunk) * slot_bytes;
  const size_t bytes =
      std::max(slot_bytes, std::min(need, std::max(dequant_bytes_, kChunkedScratchBytes)));
  float* scratch = dequant_scratch(bytes);
  const size_t scratch_floats = dequant_bytes_ / sizeof(float);
  last_writes_.add(scratch, scratch_floats);
  if (skip_group(kDeltaRuleChunked, seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh.n_k_heads,
                 sh.n_v_heads, sh.dk, sh.dv, out, scratch, scratch_floats, options_.chunked_staged,
                 static_cast<int>(state_type)))
    return;
  check(cuda::gated_delta_rule_chunked(seqs, qkv, alpha, beta_raw, a_neg, dt_bias, sh.n_k_heads,
                                       sh.n_v_heads, sh.dk, sh.dv, out, scratch, scratch_floats,
                                       options_.chunked_staged, stream_, state_type),
        "gated_delta_rule (chunked)");
}

}  // namespace hostlm::cuda
