// The serving modes of `hostlm bench`: generation through the real Engine (continuous
// batching, paged KV, prefix cache, the sampler and its grammar constraint), as `hostlm serve`
// runs it, rather than the bare forward passes of the llama-bench mode.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostlm/dtype.h"
#include "hostlm/grammar.h"
#include "hostlm/plugin_api.h"

namespace hostlm::cli {

struct ServingBenchConfig {
  std::vector<int> parallel;  // stream counts (empty: no stream runs)
  int n_prompt = 512;         // tokens of each stream's (random, distinct) prompt
  int n_gen = 128;            // tokens each stream generates
  // The --format constraint; null: stream runs are unconstrained only. When set, every
  // stream count runs without and then with it.
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const GrammarVocab> vocab;
  std::string format_name;  // as given on the command line, for the report
  int ttft_prefix = 0;      // tokens of the cached prefix (0: no TTFT run)
  int ttft_new = 32;        // tokens appended to it
  int reps = 1;
  DType kv_type = DType::F16;
};

// One stream-count run (means over the repetitions).
struct StreamsResult {
  int streams = 0;
  bool constrained = false;
  int64_t tokens = 0;        // generated, over all streams
  int64_t requests = 0;      // constrained streams that finish early continue with another
  double wall_s = 0;         // submit of all streams to the last one's last token
  double aggregate_tps = 0;  // tokens / wall_s
  double decode_tps = 0;     // while every stream decodes (0 if that window is empty)
  double step_ms = 0;        // one decode step in that window
  double ttft_mean_ms = 0, ttft_max_ms = 0;
};

struct TtftResult {
  int prefix = 0, fresh = 0;
  double cold_prefill_ms = 0;     // the prefix alone, nothing cached: admission to first token
  double cached_ttft_ms = 0;      // prefix + fresh, prefix cached: submit to first token
  int64_t prompt_eval_count = 0;  // tokens the cached request computed
  int64_t cached_tokens = 0;
};

struct ServingBenchReport {
  std::vector<StreamsResult> streams;
  std::vector<TtftResult> ttft;
};

// Runs what `config` asks for on `model`; throws hostlm::Error when a request fails.
ServingBenchReport run_serving_bench(Model& model, const ServingBenchConfig& config);

// The report as a Markdown table (per section) or JSON objects shaped like the llama-bench
// mode's; `common` holds the model and backend fields every JSON object carries.
std::string serving_report_markdown(const ServingBenchReport& report,
                                    const ServingBenchConfig& config, const std::string& model,
                                    const std::string& backend);
nlohmann::ordered_json serving_report_json(const ServingBenchReport& report,
                                           const ServingBenchConfig& config,
                                           const nlohmann::ordered_json& common);

}  // namespace hostlm::cli
