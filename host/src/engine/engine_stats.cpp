#include "hostlm/engine_stats.h"

#include <cstdio>
#include <string>

#include "hostlm/model_loader.h"

namespace hostlm {
namespace {

std::string human(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return text;
}

void line(std::string& out, const char* what, size_t bytes, const std::string& detail) {
  char text[256];
  std::snprintf(text, sizeof text, "  %-17s %11s  %s\n", what, human(bytes).c_str(),
                detail.c_str());
  out += text;
}

void metric(std::string& out, const std::string& prefix, const char* name, const char* type,
            const char* help, double value) {
  const std::string full = prefix + "_" + name;
  char number[64];
  std::snprintf(number, sizeof number, "%.17g", value);
  out += "# HELP " + full + " " + help + "\n# TYPE " + full + " " + type + "\n" + full + " " +
         number + "\n";
}

}  // namespace

std::string MemoryPlan::describe() const {
  std::string out = "hostlm: memory for " + std::to_string(max_sequences) + " sequence" +
                    (max_sequences == 1 ? "" : "s") + " of up to " + std::to_string(context) +
                    " tokens on " + backend + " (KV " + std::string(dtype_name(kv_type)) +
                    ", pages of 32 tokens)\n";
  line(out, "weights", weight_bytes, "");
  line(out, "KV cache", kv_pool_bytes,
       std::to_string(kv_pages) + " pages: " + std::to_string(kv_layers) + " attention layer" +
           (kv_layers == 1 ? "" : "s") + ", " + human(kv_bytes_per_token) + " per token; " +
           std::to_string(kv_pages_for_cache) + " pages beyond the contexts for the prefix cache");
  line(out, "recurrent state", state_bytes,
       std::to_string(state_layers) + " linear layer" + (state_layers == 1 ? "" : "s") +
           (state_type == DType::F32 ? "" : ", stored as " + std::string(dtype_name(state_type))) +
           ", " + human(state_bytes_per_sequence) + " per sequence; " +
           std::to_string(max_sequences) + " running + " + std::to_string(snapshot_slots) +
           " snapshots");
  line(out, "scratch", scratch_bytes, "activations of one forward pass");
  line(out, "total", total_bytes(), "");
  if (host_layers > 0 || host_moe_layers > 0)
    line(out, "  of which on the cpu", host_weight_bytes + host_kv_bytes + host_state_bytes,
         describe_cpu_share(host_layers, host_moe_layers) + ": weights " +
             human(host_weight_bytes) + ", KV " + human(host_kv_bytes) + ", state " +
             human(host_state_bytes));
  return out;
}

std::string prometheus_text(const EngineMetrics& m, const std::string& prefix) {
  std::string out;
  const auto d = [](auto v) { return static_cast<double>(v); };
  metric(out, prefix, "requests_running", "gauge", "Requests being prefilled or decoded.",
         d(m.running));
  metric(out, prefix, "requests_queued", "gauge", "Requests waiting for a sequence slot.",
         d(m.queued));
  metric(out, prefix, "requests_total", "counter", "Requests finished, whatever the reason.",
         d(m.requests_total));
  metric(out, prefix, "prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
         d(m.prompt_tokens_total));
  metric(out, prefix, "prompt_tokens_computed_total", "counter",
         "Prompt tokens evaluated (the rest came from the prefix cache).",
         d(m.prompt_tokens_computed_total));
  metric(out, prefix, "prompt_tokens_cached_total", "counter",
         "Prompt tokens reused from the prefix cache.", d(m.cached_tokens_total));
  metric(out, prefix, "generated_tokens_total", "counter", "Tokens generated.",
         d(m.generated_tokens_total));
  metric(out, prefix, "best_logits_draws_total", "counter",
         "Tokens drawn from the model's best few logits instead of whole rows.",
         d(m.best_logits_draws_total));
  metric(out, prefix, "generate_tokens_per_second", "gauge",
         "Generated tokens per second over the last 10 seconds.", m.generate_tokens_per_second);
  metric(out, prefix, "prompt_tokens_per_second", "gauge",
         "Prompt tokens evaluated per second over the last 10 seconds.",
         m.prompt_tokens_per_second);
  metric(out, prefix, "kv_pages_total", "gauge", "KV cache pages in the pool.",
         d(m.kv_pages_total));
  metric(out, prefix, "kv_pages_used", "gauge",
         "KV cache pages held by running requests or the prefix cache.", d(m.kv_pages_used));
  metric(out, prefix, "kv_pages_cached", "gauge",
         "KV cache pages held only by the prefix cache (evictable).", d(m.kv_pages_cached));
  metric(out, prefix, "kv_pages_reserved", "gauge",
         "KV cache pages promised to running requests and not yet used.", d(m.kv_pages_reserved));
  metric(out, prefix, "state_snapshots", "gauge", "Recurrent-state snapshots in the prefix cache.",
         d(m.state_snapshots));
  metric(out, prefix, "state_snapshot_slots", "gauge", "Slots for recurrent-state snapshots.",
         d(m.state_snapshot_slots));
  metric(out, prefix, "prefix_cache_lookups_total", "counter", "Prefix-cache lookups.",
         d(m.prefix_cache_lookups));
  metric(out, prefix, "prefix_cache_hits_total", "counter",
         "Prefix-cache lookups that reused tokens.", d(m.prefix_cache_hits));
  metric(out, prefix, "prefix_cache_hit_rate", "gauge",
         "Share of prompt tokens served from the prefix cache.", m.prefix_cache_hit_rate);
  metric(out, prefix, "steps_total", "counter", "Scheduler steps (one forward pass each).",
         d(m.steps_total));
  metric(out, prefix, "step_model_seconds_total", "counter",
         "Time of the steps inside the model's forward pass.", m.step_model_seconds_total);
  metric(out, prefix, "step_host_seconds_total", "counter",
         "Time of the steps outside the forward pass: making the batch, drawing tokens, "
         "handing them to the requests.",
         m.step_host_seconds_total);
  return out;
}

}  // namespace hostlm
