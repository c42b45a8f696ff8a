#include "bench_serving.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>

#include "hostlm/engine.h"
#include "hostlm/error.h"
#include "hostlm/text_generation.h"
#include "serving/sampling.h"

namespace hostlm::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Random prompt tokens from the first 2048 ids (ordinary text tokens in every Qwen
// vocabulary), as the llama-bench mode draws them.
class PromptSource {
 public:
  explicit PromptSource(int64_t n_vocab)
      : pick_(0, static_cast<int32_t>(std::min<int64_t>(n_vocab, 2048) - 1)) {}
  std::vector<int32_t> next(int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t& v : t) v = pick_(rng_);
    return t;
  }

 private:
  std::mt19937 rng_{1234};
  std::uniform_int_distribution<int32_t> pick_;
};

// N streams sent at once, each generating n_gen tokens through the engine. A constrained
// stream whose answer ends early (the grammar completes) goes on with a follow-up request,
// its prompt extended by the answer, as a client asking for the next one would: so every
// run generates the same number of tokens with every stream busy, and the follow-up
// computes only the answer's few tokens (the prompt comes from the prefix cache).
class StreamRun {
 public:
  StreamRun(Engine& engine, std::vector<std::vector<int32_t>> prompts, int n_gen,
            const GrammarConstraint& constraint, int64_t context)
      : engine_(engine), n_gen_(n_gen), constraint_(constraint), context_(context) {
    streams_.resize(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) streams_[i].prompt = std::move(prompts[i]);
  }

  // Submits every stream and waits for all; throws hostlm::Error when a request fails.
  void run() {
    remaining_ = streams_.size();
    start_ = Clock::now();
    for (size_t i = 0; i < streams_.size(); ++i) {
      try {
        submit(i);
      } catch (const std::exception& e) {
        // The streams already submitted still call back into this object: wait for them.
        std::lock_guard<std::mutex> lock(mutex_);
        if (error_.empty()) error_ = "stream " + std::to_string(i) + ": " + e.what();
        remaining_ -= streams_.size() - i;
        break;
      }
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return remaining_ == 0; });
    if (!error_.empty()) throw Error(error_);
  }

  StreamsResult result() const {
    StreamsResult r;
    r.streams = static_cast<int>(streams_.size());
    r.constrained = static_cast<bool>(constraint_);
    Clock::time_point last_first = start_, first_done = Clock::time_point::max(), end = start_;
    double ttft_sum = 0;
    for (const Stream& s : streams_) {
      r.tokens += static_cast<int64_t>(s.times.size());
      r.requests += s.requests;
      const double ttft = seconds(s.times.front() - start_) * 1e3;
      ttft_sum += ttft;
      r.ttft_max_ms = std::max(r.ttft_max_ms, ttft);
      last_first = std::max(last_first, s.times.front());
      first_done = std::min(first_done, s.times.back());
      end = std::max(end, s.times.back());
    }
    r.ttft_mean_ms = ttft_sum / static_cast<double>(streams_.size());
    r.wall_s = seconds(end - start_);
    r.aggregate_tps = static_cast<double>(r.tokens) / r.wall_s;
    // The steady state: after the last stream got its first token, before any finished.
    if (first_done > last_first) {
      int64_t in_window = 0;
      for (const Stream& s : streams_)
        for (const auto& t : s.times) in_window += t > last_first && t <= first_done;
      const double window = seconds(first_done - last_first);
      if (in_window > 0) {
        r.decode_tps = static_cast<double>(in_window) / window;
        r.step_ms =
            window * 1e3 * static_cast<double>(streams_.size()) / static_cast<double>(in_window);
      }
    }
    return r;
  }

 private:
  struct Stream {
    std::vector<int32_t> prompt;           // of the request now running
    std::vector<int32_t> answer;           // its tokens so far
    std::vector<Clock::time_point> times;  // every token of the stream, all requests
    int64_t requests = 0;
  };

  void submit(size_t i) {
    Stream& s = streams_[i];
    GenerationRequest request;
    request.prompt = s.prompt;
    request.max_tokens = n_gen_ - static_cast<int64_t>(s.times.size());
    // `hostlm serve`'s defaults (Ollama's), one seed per stream.
    GenerationOptions options = GenerationOptions::ollama_defaults();
    options.seed = static_cast<int64_t>(i) + 1;
    request.sampling = serving::sampler_params(options, context_);
    request.constraint = constraint_;
    s.answer.clear();
    ++s.requests;
    engine_.submit(
        std::move(request),
        [this, i](int32_t token) {
          streams_[i].times.push_back(Clock::now());
          streams_[i].answer.push_back(token);
          return true;
        },
        [this, i](const GenerationResult& r) { on_done(i, r); });
  }

  // On the scheduler thread: the stream goes on, or is done.
  void on_done(size_t i, const GenerationResult& r) {
    Stream& s = streams_[i];
    std::string error;
    if (r.done_reason == "error" || r.done_reason == "cancelled") {
      error = "stream " + std::to_string(i) + ": " + r.done_reason + " " + r.error;
    } else if (static_cast<int64_t>(s.times.size()) < n_gen_) {
      s.prompt.insert(s.prompt.end(), s.answer.begin(), s.answer.end());
      try {
        submit(i);
        return;
      } catch (const std::exception& e) {
        error = "stream " + std::to_string(i) + ": follow-up request: " + e.what();
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error.empty() && error_.empty()) error_ = error;
    if (--remaining_ == 0) done_.notify_all();
  }

  Engine& engine_;
  const int64_t n_gen_;
  const GrammarConstraint constraint_;
  const int64_t context_;
  std::vector<Stream> streams_;
  Clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable done_;
  size_t remaining_ = 0;
  std::string error_;
};

EngineOptions engine_options(const ServingBenchConfig& config, int streams, int64_t context) {
  EngineOptions o;
  o.max_sequences = streams;
  o.context = context;
  o.max_queue = static_cast<size_t>(streams) * 2 + 4;
  o.kv_type = config.kv_type;
  o.log_memory = false;
  return o;
}

StreamsResult mean_of(const std::vector<StreamsResult>& runs) {
  StreamsResult m = runs.front();
  const auto n = static_cast<double>(runs.size());
  auto avg = [&](double StreamsResult::*field) {
    double s = 0;
    for (const StreamsResult& r : runs) s += r.*field;
    m.*field = s / n;
  };
  for (auto f :
       {&StreamsResult::wall_s, &StreamsResult::aggregate_tps, &StreamsResult::decode_tps,
        &StreamsResult::step_ms, &StreamsResult::ttft_mean_ms, &StreamsResult::ttft_max_ms})
    avg(f);
  m.requests = 0;
  m.tokens = 0;
  for (const StreamsResult& r : runs) {
    m.requests += r.requests;
    m.tokens += r.tokens;
  }
  m.requests /= static_cast<int64_t>(runs.size());
  m.tokens /= static_cast<int64_t>(runs.size());
  return m;
}

StreamsResult run_streams(Model& model, const ServingBenchConfig& config, PromptSource& prompts,
                          int n, const GrammarConstraint& constraint) {
  const int64_t context = config.n_prompt + config.n_gen;
  Engine engine(model, engine_options(config, n, context));
  // Warm-up: every stream for a few tokens, so the batch shapes of this run have been seen.
  {
    std::vector<std::vector<int32_t>> warm;
    for (int i = 0; i < n; ++i) warm.push_back(prompts.next(std::min(config.n_prompt, 16)));
    StreamRun(engine, std::move(warm), std::min(config.n_gen, 4), GrammarConstraint{}, context)
        .run();
  }
  std::vector<StreamsResult> runs;
  for (int rep = 0; rep < config.reps; ++rep) {
    std::vector<std::vector<int32_t>> p;
    for (int i = 0; i < n; ++i) p.push_back(prompts.next(config.n_prompt));
    StreamRun run(engine, std::move(p), config.n_gen, constraint, context);
    run.run();
    runs.push_back(run.result());
  }
  return mean_of(runs);
}

// Submits one request and returns its result and the time from submit to its first token.
std::pair<GenerationResult, double> timed_request(Engine& engine, std::vector<int32_t> prompt) {
  GenerationRequest request;
  request.prompt = std::move(prompt);
  request.max_tokens = 1;
  request.sampling.temperature = 0;
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  GenerationResult result;
  Clock::time_point first{};
  const auto t0 = Clock::now();
  engine.submit(
      std::move(request),
      [&](int32_t) {
        first = Clock::now();
        return true;
      },
      [&](const GenerationResult& r) {
        std::lock_guard<std::mutex> lock(m);
        result = r;
        done = true;
        cv.notify_one();
      });
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return done; });
  if (result.done_reason == "error") throw Error("TTFT request: " + result.error);
  return {result, seconds(first - t0) * 1e3};
}

TtftResult run_ttft(Model& model, const ServingBenchConfig& config, PromptSource& prompts) {
  const int64_t context = int64_t{config.ttft_prefix} + config.ttft_new + 1;
  Engine engine(model, engine_options(config, 1, context));
  // Warm-up with one full prefill chunk, so the cold run pays for no first-use setup.
  timed_request(engine, prompts.next(static_cast<int>(
                            std::min<int64_t>(config.ttft_prefix, model.max_batch_tokens()) + 1)));
  TtftResult out;
  out.prefix = config.ttft_prefix;
  out.fresh = config.ttft_new;
  for (int rep = 0; rep < config.reps; ++rep) {
    std::vector<int32_t> prompt = prompts.next(config.ttft_prefix);
    const auto [cold, cold_ttft] = timed_request(engine, prompt);
    const std::vector<int32_t> more = prompts.next(config.ttft_new);
    prompt.insert(prompt.end(), more.begin(), more.end());
    const auto [cached, cached_ttft] = timed_request(engine, prompt);
    out.cold_prefill_ms += cold.prompt_ms;
    out.cached_ttft_ms += cached_ttft;
    out.prompt_eval_count += cached.prompt_eval_count;
    out.cached_tokens += cached.cached_tokens;
  }
  out.cold_prefill_ms /= config.reps;
  out.cached_ttft_ms /= config.reps;
  out.prompt_eval_count /= config.reps;
  out.cached_tokens /= config.reps;
  return out;
}

}  // namespace

ServingBenchReport run_serving_bench(Model& model, const ServingBenchConfig& config) {
  if (config.reps < 1) throw Error("bench: repetitions must be at least 1");
  ServingBenchReport report;
  PromptSource prompts(model.info().n_vocab);
  GrammarConstraint constraint;
  constraint.grammar = config.grammar;
  constraint.vocab = config.vocab;
  for (int n : config.parallel) {
    if (n < 1) throw Error("--parallel: stream counts must be at least 1");
    report.streams.push_back(run_streams(model, config, prompts, n, GrammarConstraint{}));
    if (constraint) report.streams.push_back(run_streams(model, config, prompts, n, constraint));
  }
  if (config.ttft_prefix > 0) report.ttft.push_back(run_ttft(model, config, prompts));
  return report;
}

namespace {

// The unconstrained run with the same stream count, for the ratio column.
const StreamsResult* baseline_of(const ServingBenchReport& report, const StreamsResult& r) {
  for (const StreamsResult& b : report.streams)
    if (!b.constrained && b.streams == r.streams) return &b;
  return nullptr;
}

}  // namespace

std::string serving_report_markdown(const ServingBenchReport& report,
                                    const ServingBenchConfig& config, const std::string& model,
                                    const std::string& backend) {
  std::string out;
  char line[768];
  if (!report.streams.empty()) {
    out +=
        "| model | backend | streams | prompt | gen | format | requests | t/s aggregate | "
        "t/s decode | step ms | TTFT ms mean / max | vs. no format |\n";
    out += "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const StreamsResult& r : report.streams) {
      const StreamsResult* base = baseline_of(report, r);
      std::string ratio = "-";
      if (r.constrained && base != nullptr && base->aggregate_tps > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", r.aggregate_tps / base->aggregate_tps);
        ratio = buf;
      }
      std::snprintf(line, sizeof line,
                    "| %s | %s | %d | %d | %d | %s | %lld | %.2f | %.2f | %.2f | %.1f / %.1f | "
                    "%s |\n",
                    model.c_str(), backend.c_str(), r.streams, config.n_prompt, config.n_gen,
                    r.constrained ? config.format_name.c_str() : "-",
                    static_cast<long long>(r.requests), r.aggregate_tps, r.decode_tps, r.step_ms,
                    r.ttft_mean_ms, r.ttft_max_ms, ratio.c_str());
      out += line;
    }
  }
  if (!report.ttft.empty()) {
    if (!out.empty()) out += "\n";
    out +=
        "| model | backend | cached prefix | new tokens | cold prefill ms | cold prefill t/s | "
        "TTFT ms (prefix cached) | prompt eval count | cached tokens |\n";
    out += "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const TtftResult& t : report.ttft) {
      std::snprintf(line, sizeof line, "| %s | %s | %d | %d | %.1f | %.1f | %.2f | %lld | %lld |\n",
                    model.c_str(), backend.c_str(), t.prefix, t.fresh, t.cold_prefill_ms,
                    t.cold_prefill_ms > 0 ? t.prefix / (t.cold_prefill_ms / 1e3) : 0.0,
                    t.cached_ttft_ms, static_cast<long long>(t.prompt_eval_count),
                    static_cast<long long>(t.cached_tokens));
      out += line;
    }
  }
  return out;
}

nlohmann::ordered_json serving_report_json(const ServingBenchReport& report,
                                           const ServingBenchConfig& config,
                                           const nlohmann::ordered_json& common) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const StreamsResult& r : report.streams) {
    nlohmann::ordered_json o = common;
    const StreamsResult* base = baseline_of(report, r);
    o["test"] = "streams";
    o["n_streams"] = r.streams;
    o["n_prompt"] = config.n_prompt;
    o["n_gen"] = config.n_gen;
    o["format"] = r.constrained ? config.format_name : "";
    o["requests"] = r.requests;
    o["tokens"] = r.tokens;
    o["wall_s"] = r.wall_s;
    o["aggregate_ts"] = r.aggregate_tps;
    o["decode_ts"] = r.decode_tps;
    o["step_ms"] = r.step_ms;
    o["ttft_mean_ms"] = r.ttft_mean_ms;
    o["ttft_max_ms"] = r.ttft_max_ms;
    if (r.constrained && base != nullptr && base->aggregate_tps > 0)
      o["ratio_to_unconstrained"] = r.aggregate_tps / base->aggregate_tps;
    out.push_back(o);
  }
  for (const TtftResult& t : report.ttft) {
    nlohmann::ordered_json o = common;
    o["test"] = "ttft";
    o["n_prefix"] = t.prefix;
    o["n_new"] = t.fresh;
    o["cold_prefill_ms"] = t.cold_prefill_ms;
    o["cached_ttft_ms"] = t.cached_ttft_ms;
    o["prompt_eval_count"] = t.prompt_eval_count;
    o["cached_tokens"] = t.cached_tokens;
    out.push_back(o);
  }
  return out;
}

}  // namespace hostlm::cli
