// CudaBackend's attention ops: RoPE, the q/k norms with RoPE (and with the KV store), the
// paged KV store and the paged attention. Positions and page tables are uploaded through the
// staging buffers, so a replayed step finds them where its recording did.
#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "hostlm/error.h"

namespace hostlm::cuda {

void CudaBackend::rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads,
                            size_t head_stride, int64_t rot_dims, const int32_t* positions,
                            double theta) {
  const auto timed = profile_->scope("rope");
  forget_acts();
  if (T == 0) return;
  // The q and k rotations of a layer, and every attention layer of a batch, share positions.
  const int32_t* device_positions =
      positions_.upload(positions, static_cast<size_t>(T), stream_, true, mode_);
  if (device_positions == nullptr) return replay_cannot();
  if (skip(kRope, x, token_stride, T, n_heads, head_stride, rot_dims, device_positions, theta))
    return;
  check(cuda::rope_neox(x, token_stride, T, n_heads, head_stride, rot_dims, device_positions, theta,
                        stream_),
        "rope_neox");
}

void CudaBackend::qk_norm_rope(float* qg, size_t q_head_stride, int64_t n_head, float* k,
                               int64_t n_head_kv, int64_t T, int64_t head_dim,
                               const float* q_weight, float q_eps, const float* k_weight,
                               float k_eps, int64_t rot_dims, const int32_t* positions,
                               double theta, float* q_out) {
  const auto timed = profile_->scope("qk_norm_rope");
  forget_acts();
  if (T == 0) return;
  if (head_dim > cuda::kQkNormRopeMaxHeadDim || rot_dims < 0 || rot_dims > head_dim ||
      rot_dims % 2 != 0)
    throw Error("CUDA qk_norm_rope supports heads up to " +
                std::to_string(cuda::kQkNormRopeMaxHeadDim) +
                " wide with an even rotated part within them, not " + std::to_string(head_dim) +
                " with " + std::to_string(rot_dims) + " rotated");
  const float* qw = host_array(q_weight, static_cast<size_t>(head_dim));
  const float* kw = host_array(k_weight, static_cast<size_t>(head_dim));
  const int32_t* device_positions =
      positions_.upload(positions, static_cast<size_t>(T), stream_, true, mode_);
  if (device_positions == nullptr) return replay_cannot();
  if (skip(kQkNormRope, qg, q_head_stride, n_head, k, n_head_kv, T, head_dim, qw, q_eps, kw, k_eps,
           rot_dims, device_positions, theta, q_out))
    return;
  check(cuda::qk_norm_rope(qg, q_head_stride, n_head, k, n_head_kv, T, head_dim, qw, q_eps, kw,
                           k_eps, rot_dims, device_positions, theta, q_out, stream_),
        "qk_norm_rope");
}

// One launch for F32 and F16 pages (HOSTLM_CUDA_QK_STORE=0: two), the two ops otherwise.
void CudaBackend::qk_norm_rope_store(std::span<const PagedSequence> seqs, float* qg,
                                     size_t q_head_stride, int64_t n_head, float* k, const float* v,
                                     int64_t n_head_kv, int64_t T, int64_t head_dim,
                                     const float* q_weight, float q_eps, const float* k_weight,
                                     float k_eps, int64_t rot_dims, const int32_t* positions,
                                     double theta, float* q_out) {
  const bool fits = options_.qk_store && !seqs.empty() && T > 0 &&
                    (seqs[0].kv.type == DType::F16 || seqs[0].kv.type == DType::F32) &&
                    seqs[0].kv.n_head_kv == n_head_kv && seqs[0].kv.head_dim == head_dim &&
                    head_dim <= cuda::kQkNormRopeMaxHeadDim && rot_dims >= 0 &&
                    rot_dims <= head_dim && rot_dims % 2 == 0;
  if (!fits) {
    Backend::qk_norm_rope_store(seqs, qg, q_head_stride, n_head, k, v, n_head_kv, T, head_dim,
                                q_weight, q_eps, k_weight, k_eps, rot_dims, positions, theta,
                                q_out);
    return;
  }
  const auto timed = profile_->scope("qk_norm_rope_store");
  forget_acts();
  const float* qw = host_array(q_weight, static_cast<size_t>(head_dim));
  const float* kw = host_array(k_weight, static_cast<size_t>(head_dim));
  // Uploaded in the two ops' order: the positions, then the page tables.
  const int32_t* device_positions =
      positions_.upload(positions, static_cast<size_t>(T), stream_, true, mode_);
  if (device_positions == nullptr) return replay_cannot();
  const cuda::PagedBatch batch = paged_.upload(seqs, stream_, mode_);
  if (batch.descs == nullptr) return replay_cannot();
  kv_stored_ = seqs[0].kv.k;
  if (skip_paged(kQkNormRopeStore, batch, qg, q_head_stride, n_head, k, v, T, qw, q_eps, kw, k_eps,
                 rot_dims, device_positions, theta, q_out))
    return;
  check(
      cuda::qk_norm_rope_store(batch, qg, q_head_stride, n_head, k, v, n_head_kv, T, head_dim, qw,
                               q_eps, kw, k_eps, rot_dims, device_positions, theta, q_out, stream_),
      "qk_norm_rope_store");
}

void CudaBackend::kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) {
  const auto timed = profile_->scope("kv_store");
  forget_acts();
  if (seqs.empty()) return;
  const cuda::PagedBatch batch = paged_.upload(seqs, stream_, mode_);
  if (batch.descs == nullptr) return replay_cannot();
  kv_stored_ = seqs[0].kv.k;
  if (skip_paged(kKvStore, batch, k, v)) return;
  check(cuda::kv_store(batch, k, v, stream_), "kv_store");
}

void CudaBackend::paged_attention(std::span<const PagedSequence> seqs, const float* q,
                                  size_t q_stride, int64_t n_head, float scale, float* out) {
  const auto timed = profile_->scope("paged_attention");
  // The op just before stored this batch's new keys and values and nothing else (no kernel
  // comes between when norms are not folded): the kernel may read ahead (kernels.h).
  const bool after_store = !seqs.empty() && kv_stored_ == seqs[0].kv.k && !quant_->folds_norms();
  forget_acts();
  if (seqs.empty()) return;
  if (seqs[0].kv.head_dim > kAttentionMaxHeadDim)
    throw Error("CUDA attention supports head_dim up to " + std::to_string(kAttentionMaxHeadDim) +
                ", not " + std::to_string(seqs[0].kv.head_dim));
  const cuda::PagedBatch batch = paged_.upload(seqs, stream_, mode_);
  if (batch.descs == nullptr) return replay_cannot();
  const size_t scratch_floats = cuda::paged_attention_scratch(batch, n_head);
  if (mode_ == UploadMode::replay && scratch_floats > attention_scratch_floats_)
    return replay_cannot();
  float* scratch =
      mode_ == UploadMode::replay ? attention_scratch_ : attention_scratch(scratch_floats);
  // Its kernels write the outputs' rows and the scratch (and the uploads the page tables).
  last_writes_.start(!quant_->folds_norms());
  const int64_t width = n_head * seqs[0].kv.head_dim;
  for (const PagedSequence& s : seqs)
    last_writes_.add(out + s.row * width, static_cast<size_t>(s.T * width));
  last_writes_.add(scratch, scratch_floats);
  const bool early =
      after_store && !paged_.copied() && options_.attention_early && cuda::early_loads_enabled();
  if (skip_paged(kAttention, batch, q, q_stride, n_head, scale, out, scratch, scratch_floats,
                 cuda::flash_prefill_rows(batch, n_head), early))
    return;
  check(cuda::paged_attention(batch, q, q_stride, n_head, scale, out, scratch, stream_, early),
        "paged_attention");
}

}  // namespace hostlm::cuda
