#include "hostlm/engine.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <string_view>
#include <thread>

#include "engine/memory_plan.h"
#include "engine/prefix_cache.h"
#include "engine/worker_pool.h"
#include "hostlm/kv_cache.h"

namespace hostlm {
namespace {

using Clock = std::chrono::steady_clock;
using engine::BlockKey;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t pages_for(int64_t tokens) { return (tokens + kKvPageTokens - 1) / kKvPageTokens; }

struct Pending {
  Engine::RequestId id = 0;
  GenerationRequest request;
  std::unique_ptr<Sampler> sampler;  // made at submit, so bad parameters fail there
  Engine::OnToken on_token;
  Engine::OnDone on_done;
  Clock::time_point queued_at;
  int64_t truncated = 0;
};

// A request the scheduler is working on: its sequence, sampler and progress.
struct Active {
  Pending p;
  std::unique_ptr<KvSequence> seq;
  std::vector<int32_t> tokens;  // the prompt, then each generated token once it is evaluated
  int64_t prompt_len = 0;
  std::span<float> logits;  // [n_vocab], the last position's (a LogitsRows row)
  // Where the model writes the last position's best logits instead, when the sampler reads
  // no more than those (best_k of them; 0: the whole row this step).
  std::span<float> best_values;
  std::span<int32_t> best_ids;
  int32_t best_k = 0;
  int32_t next_input = -1;               // token to feed in the next decode step
  std::vector<int64_t> snapshot_points;  // prompt positions still ahead, ascending
  size_t next_point = 0;
  std::vector<BlockKey> block_keys;  // keys of the full pages registered in the prefix cache
  GenerationResult result;
  Clock::time_point started, first_token;
  bool finished = false;
};

GenerationResult cancelled_in_queue(const Pending& p) {
  GenerationResult r;
  r.done_reason = "cancelled";
  r.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
  r.truncated_tokens = p.truncated;
  r.queue_ms = ms_between(p.queued_at, Clock::now());
  return r;
}

// The running requests' last-position logits, one row per running-state slot (a running
// sequence holds its slot for life, so rows are never shared), page-locked once through the
// backend so each step's logits copies run at full speed instead of through a bounce buffer.
class LogitsRows {
 public:
  LogitsRows(Backend& backend, int64_t rows, int64_t n_vocab)
      : backend_(backend),
        n_vocab_(static_cast<size_t>(n_vocab)),
        data_(static_cast<size_t>(rows) * n_vocab_) {
    backend_.pin_host(data_.data(), data_.size() * sizeof(float));
  }
  ~LogitsRows() { backend_.unpin_host(data_.data()); }
  LogitsRows(const LogitsRows&) = delete;
  LogitsRows& operator=(const LogitsRows&) = delete;
  std::span<float> row(int32_t slot) {
    return std::span<float>(data_).subspan(static_cast<size_t>(slot) * n_vocab_, n_vocab_);
  }

 private:
  Backend& backend_;
  size_t n_vocab_;
  std::vector<float> data_;
};

// The running requests' best logits (values and ids), kMaxBestLogits per running-state slot,
// page-locked like LogitsRows.
constexpr int32_t kMaxBestLogits = 256;
// Prompt tokens of the warm-up of a model split with the CPU (see warm_up).
constexpr int64_t kShortWarmUp = 32;
class BestLogitsRows {
 public:
  BestLogitsRows(Backend& backend, int64_t rows)
      : backend_(backend),
        values_(static_cast<size_t>(rows) * kMaxBestLogits),
        ids_(static_cast<size_t>(rows) * kMaxBestLogits) {
    backend_.pin_host(values_.data(), values_.size() * sizeof(float));
    backend_.pin_host(ids_.data(), ids_.size() * sizeof(int32_t));
  }
  ~BestLogitsRows() {
    backend_.unpin_host(values_.data());
    backend_.unpin_host(ids_.data());
  }
  BestLogitsRows(const BestLogitsRows&) = delete;
  BestLogitsRows& operator=(const BestLogitsRows&) = delete;
  std::span<float> values(int32_t slot) {
    return std::span<float>(values_).subspan(static_cast<size_t>(slot) * kMaxBestLogits,
                                             kMaxBestLogits);
  }
  std::span<int32_t> ids(int32_t slot) {
    return std::span<int32_t>(ids_).subspan(static_cast<size_t>(slot) * kMaxBestLogits,
                                            kMaxBestLogits);
  }

 private:
  Backend& backend_;
  std::vector<float> values_;
  std::vector<int32_t> ids_;
};

}  // namespace

struct Engine::Impl {
  Model& model;
  EngineOptions options;
  MemoryPlan plan;
  // Memory; declared before the requests that hold parts of it, so destroyed after them.
  std::unique_ptr<KvPagePool> pool;
  std::unique_ptr<RecurrentStateSlots> running_slots, snapshot_slots;
  std::unique_ptr<engine::PrefixCache> cache;
  std::unique_ptr<LogitsRows> logits_rows;  // rows indexed by running_slots' slots
  // Set when requests whose sampler reads only the best few logits get only those from the
  // model (EngineOptions::best_logits).
  std::unique_ptr<BestLogitsRows> best_rows;

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Pending> queue;
  std::vector<RequestId> cancelled;  // ids asked to stop, checked by the scheduler
  size_t n_running = 0;
  RequestId next_id = 1;
  bool stopping = false;
  std::deque<std::function<void()>> tasks;  // run_exclusive(), run between steps
  EngineMetrics stats;                      // counters and the pool gauges, under the mutex
  struct StepRecord {
    Clock::time_point at;
    int64_t generated, prompt;
  };
  std::deque<StepRecord> recent;  // the last 10 seconds of steps, for the rates
  std::thread scheduler;

  // Scheduler-thread state (no lock needed).
  std::vector<std::unique_ptr<Active>> active;
  std::vector<Model::BatchItem> batch;
  std::vector<Active*> batch_owner;

  Impl(Model& m, EngineOptions o) : model(m), options(o) {
    if (options.max_sequences < 1) options.max_sequences = 1;
    if (options.prefill_chunk <= 0) options.prefill_chunk = model.max_batch_tokens();
    if (options.snapshot_interval > 0)  // whole pages, so interval snapshots need no tail page
      options.snapshot_interval = pages_for(options.snapshot_interval) * kKvPageTokens;
    plan = engine::plan_memory(model, options);
    if (options.log_memory) std::fputs(plan.describe().c_str(), stderr);
    Backend& backend = *model.backend();
    const CacheLayout layout = model.cache_layout();
    const CachePlacement placement = CachePlacement::of(model);
    pool = std::make_unique<KvPagePool>(placement, layout, options.kv_type, plan.kv_pages);
    running_slots = std::make_unique<RecurrentStateSlots>(placement, layout, options.max_sequences);
    snapshot_slots = std::make_unique<RecurrentStateSlots>(placement, layout, plan.snapshot_slots);
    logits_rows =
        std::make_unique<LogitsRows>(backend, options.max_sequences, model.info().n_vocab);
    const bool best =
        model.writes_best_logits() &&
        (options.best_logits > 0 || (options.best_logits < 0 && backend.prefers_best_logits()));
    if (best) best_rows = std::make_unique<BestLogitsRows>(backend, options.max_sequences);
    if (options.prefix_cache) cache = std::make_unique<engine::PrefixCache>(*pool, *snapshot_slots);
    stats.kv_pages_total = pool->total();
    stats.state_snapshot_slots = snapshot_slots->total();
    batch.reserve(static_cast<size_t>(options.max_sequences));
    batch_owner.reserve(static_cast<size_t>(options.max_sequences));
    if (options.warm_up && backend.name() != "cpu") warm_up();
    scheduler = std::thread([this] { run(); });
  }

  // See EngineOptions::warm_up. A prompt of one prefill chunk takes the prefill paths at the
  // shapes most prompts use (cuBLAS loads a kernel on the first call of each shape); the
  // decode steps take the recorded one. It runs in the engine's own pool and state slots when
  // they hold it: a sequence of its own would hold a second set of recurrent states (48 MiB on
  // the 9B) and KV pages on the GPU for a moment, above what the engine keeps.
  void warm_up() {
    // A model with layers or experts on the CPU warms up with a short prompt: a whole chunk
    // through the CPU's share could take many seconds at load (about 40 s for the 35B-A3B
    // with every layer's experts on this project's 2-core machine, from its CPU pp64 rate).
    const ModelInfo& info = model.info();
    const int64_t chunk =
        info.host_layers > 0 || info.host_moe_layers > 0 ? kShortWarmUp : options.prefill_chunk;
    const int64_t prompt = std::min(chunk, model.max_batch_tokens());
    std::unique_ptr<Sequence> seq;
    if (auto pooled = std::make_unique<KvSequence>(*pool, *running_slots, prompt + 2);
        pooled->reserve(pages_for(prompt + 2)))
      seq = std::move(pooled);
    else
      seq = model.new_sequence(prompt + 2);
    std::vector<int32_t> tokens(static_cast<size_t>(prompt), 0);
    std::vector<float> logits(static_cast<size_t>(model.info().n_vocab));
    model.eval(*seq, tokens, false, logits);
    for (int step = 0; step < 2; ++step)
      model.eval(*seq, std::span<const int32_t>(tokens.data(), 1), false, logits);
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    scheduler.join();
  }

  bool take_cancel(RequestId id) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = std::find(cancelled.begin(), cancelled.end(), id);
    if (it == cancelled.end()) return false;
    cancelled.erase(it);
    return true;
  }

  // The pool gauges, for metrics(); called with the mutex held. Counting the cache's
  // evictable pages walks the cache, so `all` = false leaves that count as it was.
  void publish_memory(bool all = true) {
    stats.kv_pages_used = pool->used();
    if (all) stats.kv_pages_cached = cache ? cache->reclaimable_pages() : 0;
    stats.kv_pages_reserved = pool->reserved();
    stats.state_snapshots = cache ? cache->snapshots() : 0;
  }
  uint64_t generated_unpublished = 0;   // tokens sampled since stats last counted them
  uint64_t best_draws_unpublished = 0;  // of which drawn from the best logits only
  // The step's requests that draw a token, and what they drew (sample_job fills it).
  std::vector<Active*> sampling;
  std::vector<int32_t> sampled;
  engine::WorkerPool samplers{sampler_threads()};
  std::vector<std::string> sample_errors;  // a failed draw ends only its own request
  const std::function<void(size_t)> sample_job = [this](size_t i) {
    try {
      const Active& a = *sampling[i];
      sampled[i] = a.best_k > 0 ? a.p.sampler->sample_best(
                                      a.best_values.first(static_cast<size_t>(a.best_k)),
                                      a.best_ids.first(static_cast<size_t>(a.best_k)))
                                : a.p.sampler->sample(a.logits);
    } catch (const std::exception& e) {
      sample_errors[i] = e.what();
      sampled[i] = -1;
    }
  };

  // Helpers for parallel sampling: the cores beyond the scheduler's, at most 15, since the
  // accelerator waits while the step's tokens are drawn (64 streams on a 16-core H200 host:
  // 15 helpers instead of 7 cut that wait from 1.6-1.8 to 0.9-1.0 ms a step).
  // HOSTLM_SAMPLER_THREADS=N sets their number (0: the scheduler draws every token).
  static size_t sampler_threads() {
    if (const char* env = std::getenv("HOSTLM_SAMPLER_THREADS"); env && *env) {
      const std::string_view text(env);
      int n = -1;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (error != std::errc{} || end != text.data() + text.size() || n < 0 || n > 63)
        throw Error("HOSTLM_SAMPLER_THREADS must be a whole number from 0 to 63, not '" +
                    std::string(text) + "'");
      return static_cast<size_t>(n);
    }
    const size_t cores = std::max(1u, std::thread::hardware_concurrency());
    return std::min<size_t>(cores - 1, 15);
  }
  Clock::time_point published_at;

  void finish(Active& a, const std::string& reason) {
    if (a.finished) return;
    a.finished = true;
    const auto now = Clock::now();
    GenerationResult& r = a.result;
    r.done_reason = reason;
    r.generate_ms = a.first_token == Clock::time_point{} ? 0 : ms_between(a.first_token, now);
    r.eval_ms = r.generate_ms;
    r.eval_count = static_cast<int64_t>(r.tokens.size());
    // The pages go back (or stay only in the prefix cache) before anyone hears of the end.
    a.seq.reset();
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.requests_total;
      stats.generated_tokens_total += generated_unpublished;
      stats.best_logits_draws_total += best_draws_unpublished;
      generated_unpublished = 0;
      best_draws_unpublished = 0;
      publish_memory();
      published_at = now;
    }
    if (a.p.on_done) a.p.on_done(r);
  }

  // Where the prefix cache should keep recurrent-state snapshots of this prompt.
  std::vector<int64_t> snapshot_points(const GenerationRequest& req, int64_t n, int64_t cached) {
    std::vector<int64_t> points;
    if (!cache) return points;
    for (int64_t pos : req.snapshot_at)
      if (pos > cached && pos <= n) points.push_back(pos);
    if (options.snapshot_interval > 0)
      for (int64_t pos = options.snapshot_interval; pos < n; pos += options.snapshot_interval)
        if (pos > cached) points.push_back(pos);
    points.push_back(n);
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    return points;
  }

  // Starts the request at the head of the queue if a slot and its pages are free. Returns
  // false when it has to wait.
  bool admit_head() {
    Pending* head;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (queue.empty() || active.size() >= static_cast<size_t>(options.max_sequences))
        return false;
      head = &queue.front();  // only this thread removes queue entries
    }
    const std::vector<int32_t>& prompt = head->request.prompt;
    const int64_t n = static_cast<int64_t>(prompt.size());
    const int64_t capacity = n + head->request.max_tokens;
    auto a = std::make_unique<Active>();
    a->seq = std::make_unique<KvSequence>(*pool, *running_slots, capacity);
    engine::PrefixCache::Hit hit;
    if (cache) hit = cache->lookup(prompt, n - 1);
    if (hit.tokens > 0) a->seq->adopt_prefix(hit.pages, hit.tokens);
    // Every page it may write: the shared full pages are never written, a shared last page is
    // copied first.
    if (!a->seq->reserve(pages_for(capacity) - hit.tokens / kKvPageTokens)) {
      if (!active.empty()) return false;  // running requests will give pages back
      // Alone, the shared last page it holds may be what is missing: start cold instead
      // (submit checked that a whole request fits the pool).
      a->seq.reset();
      a->seq = std::make_unique<KvSequence>(*pool, *running_slots, capacity);
      hit = {};
      if (!a->seq->reserve(pages_for(capacity)))
        throw Error("the KV cache cannot hold " + std::to_string(capacity) + " tokens");
    }
    if (hit.tokens > 0)
      copy_state(*running_slots, a->seq->state_slot(), *snapshot_slots, hit.snapshot_slot);
    {
      std::lock_guard<std::mutex> lock(mutex);
      a->p = std::move(queue.front());
      queue.pop_front();
      ++n_running;
      ++stats.prefix_cache_lookups;
      if (hit.tokens > 0) ++stats.prefix_cache_hits;
      stats.prompt_tokens_total += static_cast<uint64_t>(n);
      stats.cached_tokens_total += static_cast<uint64_t>(hit.tokens);
      stats.prompt_tokens_computed_total += static_cast<uint64_t>(n - hit.tokens);
      stats.prefix_cache_hit_rate = static_cast<double>(stats.cached_tokens_total) /
                                    static_cast<double>(stats.prompt_tokens_total);
      publish_memory();
    }
    a->started = Clock::now();
    a->tokens = std::move(a->p.request.prompt);
    a->tokens.reserve(static_cast<size_t>(capacity));
    a->prompt_len = n;
    a->logits = logits_rows->row(a->seq->state_slot());
    if (best_rows) {
      a->best_values = best_rows->values(a->seq->state_slot());
      a->best_ids = best_rows->ids(a->seq->state_slot());
    }
    a->snapshot_points = snapshot_points(a->p.request, n, hit.tokens);
    a->block_keys = std::move(hit.keys);
    a->p.sampler->accept(a->tokens);  // the prompt counts for the repeat window
    GenerationResult& r = a->result;
    r.prompt_tokens = n;
    r.cached_tokens = hit.tokens;
    r.prompt_eval_count = n - hit.tokens;
    r.truncated_tokens = a->p.truncated;
    r.queue_ms = ms_between(a->p.queued_at, a->started);
    active.push_back(std::move(a));
    return true;
  }

  void admit() {
    try {
      while (admit_head()) {
      }
    } catch (const std::exception& e) {
      // No slot or no memory for the head request although the plan promised them: fail it
      // rather than the engine.
      Pending p;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (queue.empty()) return;
        p = std::move(queue.front());
        queue.pop_front();
      }
      GenerationResult r = cancelled_in_queue(p);
      r.done_reason = "error";
      r.error = e.what();
      if (p.on_done) p.on_done(r);
    }
  }

  // Hands the sequence's newly filled pages to the prefix cache.
  void register_pages(Active& a) {
    if (!cache) return;
    const auto pages = a.seq->pages();
    while (static_cast<int64_t>(a.block_keys.size() + 1) * kKvPageTokens <= a.seq->n_past()) {
      const size_t i = a.block_keys.size();
      const BlockKey parent = i == 0 ? BlockKey{} : a.block_keys[i - 1];
      a.block_keys.push_back(cache->add_block(
          parent, std::span(a.tokens).subspan(i * kKvPageTokens, kKvPageTokens), pages[i]));
    }
  }

  void take_snapshot(Active& a) {
    const int64_t pos = a.seq->n_past();
    const int64_t full = pos / kKvPageTokens;
    const BlockKey base = full == 0 ? BlockKey{} : a.block_keys[static_cast<size_t>(full - 1)];
    const auto tail = std::span(a.tokens).subspan(static_cast<size_t>(full * kKvPageTokens),
                                                  static_cast<size_t>(pos - full * kKvPageTokens));
    const int32_t tail_page = tail.empty() ? -1 : a.seq->pages()[static_cast<size_t>(full)];
    cache->add_snapshot(base, tail, tail_page, *running_slots, a.seq->state_slot());
  }

  static Model::BatchItem batch_item(Active& a, std::span<const int32_t> tokens,
                                     std::span<float> logits) {
    Model::BatchItem item;
    item.seq = a.seq.get();
    item.tokens = tokens;
    item.logits = logits;
    return item;
  }

  // Asks the model for the request's best logits only, when its sampler reads no more (and no
  // one asked to see the whole row).
  void ask_best_logits(Active& a, Model::BatchItem& item) {
    a.best_k = 0;
    if (!best_rows || a.p.request.on_logits) return;
    const int32_t k = a.p.sampler->best_logits_needed(model.info().n_vocab);
    if (k <= 0 || k > kMaxBestLogits) return;
    a.best_k = k;
    item.best_values = a.best_values.first(static_cast<size_t>(k));
    item.best_ids = a.best_ids.first(static_cast<size_t>(k));
  }

  // One step: a token for every decoding request, then prompt chunks in the budget left.
  // Chunks end at snapshot points, so the state there can be copied.
  void step() {
    const auto began = Clock::now();
    batch.clear();
    batch_owner.clear();
    int64_t budget = model.max_batch_tokens();
    for (auto& a : active)
      if (a->next_input >= 0 && budget > 0) {
        batch.push_back(batch_item(*a, std::span<const int32_t>(&a->next_input, 1), a->logits));
        batch_owner.push_back(a.get());
        ask_best_logits(*a, batch.back());
        --budget;
      }
    int64_t prompt_tokens = 0;
    for (auto& a : active) {
      const int64_t start = a->seq->n_past();
      const int64_t left = a->prompt_len - start;
      if (a->next_input >= 0 || left <= 0 || budget <= 0) continue;
      int64_t chunk = std::min({left, budget, options.prefill_chunk});
      if (a->next_point < a->snapshot_points.size())
        chunk = std::min(chunk, a->snapshot_points[a->next_point] - start);
      const bool completes = chunk == left;
      batch.push_back(batch_item(
          *a, std::span<const int32_t>(a->tokens.data() + start, static_cast<size_t>(chunk)),
          completes ? a->logits : std::span<float>()));
      batch_owner.push_back(a.get());
      if (completes) ask_best_logits(*a, batch.back());
      budget -= chunk;
      prompt_tokens += chunk;
    }
    if (batch.empty()) return;
    const auto model_began = Clock::now();
    try {
      model.eval_batch(batch);
    } catch (const std::exception& e) {
      for (Active* a : batch_owner) {
        a->result.error = e.what();
        finish(*a, "error");
      }
      return;
    }
    const auto model_ended = Clock::now();
    // The caches first (one thread), then every due token drawn in parallel, then the
    // bookkeeping in batch order again.
    sampling.clear();
    for (size_t i = 0; i < batch.size(); ++i) {
      Active& a = *batch_owner[i];
      if (a.next_input >= 0) a.tokens.push_back(a.next_input);
      register_pages(a);
      if (a.next_input < 0) {
        const int64_t done = a.seq->n_past();
        if (a.next_point < a.snapshot_points.size() && a.snapshot_points[a.next_point] == done) {
          take_snapshot(a);
          ++a.next_point;
        }
        if (done < a.prompt_len) continue;
        a.first_token = Clock::now();
        a.result.prompt_ms = ms_between(a.started, a.first_token);
        a.result.prompt_eval_ms = a.result.prompt_ms;
      }
      if (a.p.request.on_logits) a.p.request.on_logits(a.logits);
      sampling.push_back(&a);
    }
    sampled.resize(sampling.size());
    sample_errors.resize(sampling.size());
    samplers.run(sampling.size(), sample_job);
    int64_t generated = 0;
    for (size_t i = 0; i < sampling.size(); ++i) {
      Active& a = *sampling[i];
      const int32_t token = sampled[i];
      if (token < 0) {
        a.result.error = std::move(sample_errors[i]);
        sample_errors[i].clear();
        finish(a, "error");
        continue;
      }
      a.result.tokens.push_back(token);
      ++generated;
      ++generated_unpublished;
      if (a.best_k > 0) ++best_draws_unpublished;
      const bool keep_going = !a.p.on_token || a.p.on_token(token);
      const auto& stops = a.p.request.stop_tokens;
      const auto& constraint = a.p.request.constraint;
      const bool grammar_end =
          constraint && std::ranges::find(constraint.vocab->end_tokens(), token) !=
                            constraint.vocab->end_tokens().end();
      if (!keep_going)
        finish(a, "cancelled");
      else if (grammar_end || std::find(stops.begin(), stops.end(), token) != stops.end())
        finish(a, "stop");
      else if (static_cast<int64_t>(a.result.tokens.size()) >= a.p.request.max_tokens)
        finish(a, "length");
      else
        a.next_input = token;
    }
    record_step(generated, prompt_tokens, {began, model_began, model_ended});
  }

  // When a step began, and when its forward pass began and returned.
  struct StepTimes {
    Clock::time_point began, model_began, model_ended;
  };

  void record_step(int64_t generated, int64_t prompt_tokens, const StepTimes& t) {
    const auto now = Clock::now();
    const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    std::lock_guard<std::mutex> lock(mutex);
    ++stats.steps_total;
    stats.step_model_seconds_total += seconds(t.model_ended - t.model_began);
    stats.step_host_seconds_total += seconds((t.model_began - t.began) + (now - t.model_ended));
    stats.generated_tokens_total += generated_unpublished;
    stats.best_logits_draws_total += best_draws_unpublished;
    generated_unpublished = 0;
    best_draws_unpublished = 0;
    recent.push_back({now, generated, prompt_tokens});
    while (!recent.empty() && now - recent.front().at > std::chrono::seconds(10))
      recent.pop_front();
    // The evictable count walks the cache; a few times a second is plenty for it.
    const bool all = now - published_at > std::chrono::milliseconds(100);
    publish_memory(all);
    if (all) published_at = now;
  }

  void retire_finished() {
    for (auto& a : active)
      if (!a->finished && take_cancel(a->p.id)) finish(*a, "cancelled");
    {
      // Ids of requests that are neither queued nor running (already done) are forgotten.
      std::lock_guard<std::mutex> lock(mutex);
      std::erase_if(cancelled, [&](RequestId id) {
        const bool queued_now =
            std::any_of(queue.begin(), queue.end(), [&](const Pending& p) { return p.id == id; });
        const bool running_now =
            std::any_of(active.begin(), active.end(), [&](const auto& a) { return a->p.id == id; });
        return !queued_now && !running_now;
      });
    }
    const size_t before = active.size();
    active.erase(
        std::remove_if(active.begin(), active.end(), [](const auto& a) { return a->finished; }),
        active.end());
    std::lock_guard<std::mutex> lock(mutex);
    n_running -= before - active.size();
  }

  // Queued requests that were cancelled are answered at once, not when a slot frees up.
  void drop_cancelled_queued() {
    std::vector<Pending> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto it = queue.begin(); it != queue.end();) {
        auto c = std::find(cancelled.begin(), cancelled.end(), it->id);
        if (c == cancelled.end()) {
          ++it;
          continue;
        }
        cancelled.erase(c);
        dropped.push_back(std::move(*it));
        it = queue.erase(it);
        ++stats.requests_total;
      }
    }
    for (Pending& p : dropped)
      if (p.on_done) p.on_done(cancelled_in_queue(p));
  }

  void run() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock,
                  [&] { return stopping || !queue.empty() || !active.empty() || !tasks.empty(); });
        if (stopping) break;
      }
      drop_cancelled_queued();
      admit();
      retire_finished();
      run_tasks();
      if (active.empty()) {
        // Waiting for memory with nothing running cannot end; admit() fails such a head.
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait_for(lock, std::chrono::milliseconds(1));
        continue;
      }
      step();
      retire_finished();
    }
    run_tasks();  // callers are waiting for them
    // Shutting down: every request still known ends as cancelled.
    for (auto& a : active) finish(*a, "cancelled");
    active.clear();
    std::deque<Pending> rest;
    {
      std::lock_guard<std::mutex> lock(mutex);
      rest.swap(queue);
    }
    for (Pending& p : rest)
      if (p.on_done) p.on_done(cancelled_in_queue(p));
  }

  void run_tasks() {
    for (;;) {
      std::function<void()> task;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (tasks.empty()) return;
        task = std::move(tasks.front());
        tasks.pop_front();
      }
      task();
    }
  }

  // Truncates or refuses a prompt that does not fit; returns the tokens dropped.
  int64_t fit_context(GenerationRequest& request) const {
    const int64_t n = static_cast<int64_t>(request.prompt.size());
    if (n + request.max_tokens <= options.context) return 0;
    if (!request.truncate)
      throw Error("prompt (" + std::to_string(n) + " tokens) plus max_tokens (" +
                  std::to_string(request.max_tokens) + ") exceed the context of " +
                  std::to_string(options.context) + " tokens");
    const int64_t keep = std::clamp<int64_t>(request.num_keep, 0, n);
    const int64_t room = options.context - request.max_tokens;
    if (room <= keep)
      throw Error("cannot truncate the prompt: max_tokens (" + std::to_string(request.max_tokens) +
                  ") and num_keep (" + std::to_string(keep) + ") leave no room in the context of " +
                  std::to_string(options.context) + " tokens");
    const int64_t drop = n - room;
    request.prompt.erase(request.prompt.begin() + keep, request.prompt.begin() + keep + drop);
    for (int64_t& pos : request.snapshot_at) pos = pos <= keep ? pos : pos - drop;
    return drop;
  }
};

Engine::Engine(Model& model, EngineOptions options)
    : impl_(std::make_unique<Impl>(model, options)) {}

Engine::~Engine() = default;

void Engine::run_exclusive(const std::function<void(Model&)>& task) {
  std::packaged_task<void()> job([&] { task(impl_->model); });
  std::future<void> done = job.get_future();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stopping) throw Error("the engine is shutting down");
    impl_->tasks.push_back([&job] { job(); });
  }
  impl_->wake.notify_all();
  done.get();
}

Engine::RequestId Engine::submit(GenerationRequest request, OnToken on_token, OnDone on_done) {
  if (request.prompt.empty()) throw Error("the prompt has no tokens");
  if (request.max_tokens < 1) throw Error("max_tokens must be at least 1");
  const int64_t vocab = impl_->model.info().n_vocab;
  for (int32_t t : request.prompt)
    if (t < 0 || t >= vocab)
      throw Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                  std::to_string(vocab - 1) + ")");
  for (const auto& [token, bias] : request.sampling.logit_bias)
    if (token < 0 || token >= vocab)
      throw Error("logit_bias names token " + std::to_string(token) +
                  ", outside the vocabulary (0.." + std::to_string(vocab - 1) + ")");
  const int64_t truncated = impl_->fit_context(request);
  const int64_t pages = pages_for(static_cast<int64_t>(request.prompt.size()) + request.max_tokens);
  if (pages > impl_->plan.kv_pages)
    throw Error("the request needs " + std::to_string(pages) + " KV pages but the pool holds " +
                std::to_string(impl_->plan.kv_pages) + " (raise kv_pool_bytes)");
  auto sampler = std::make_unique<Sampler>(request.sampling, request.constraint);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->stopping) throw Error("the engine is shutting down");
  if (impl_->queue.size() >= impl_->options.max_queue)
    throw EngineBusy("server busy: " + std::to_string(impl_->queue.size()) +
                     " requests are already waiting");
  const RequestId id = impl_->next_id++;
  impl_->queue.push_back({id, std::move(request), std::move(sampler), std::move(on_token),
                          std::move(on_done), Clock::now(), truncated});
  impl_->wake.notify_all();
  return id;
}

void Engine::cancel(RequestId id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->cancelled.push_back(id);
  impl_->wake.notify_all();
}

GenerationResult Engine::generate(GenerationRequest request) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  GenerationResult out;
  submit(std::move(request), nullptr, [&](const GenerationResult& r) {
    std::lock_guard<std::mutex> lock(m);
    out = r;
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return done; });
  return out;
}

size_t Engine::running() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->n_running;
}

size_t Engine::queued() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->queue.size();
}

void Engine::set_max_queue(size_t max_queue) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->options.max_queue = max_queue;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  EngineMetrics m = impl_->stats;
  m.running = impl_->n_running;
  m.queued = impl_->queue.size();
  const auto& recent = impl_->recent;
  if (!recent.empty()) {
    const double seconds =
        std::max(1e-3, std::chrono::duration<double>(Clock::now() - recent.front().at).count());
    int64_t generated = 0, prompt = 0;
    for (const auto& r : recent) {
      generated += r.generated;
      prompt += r.prompt;
    }
    m.generate_tokens_per_second = static_cast<double>(generated) / seconds;
    m.prompt_tokens_per_second = static_cast<double>(prompt) / seconds;
  }
  return m;
}

const MemoryPlan& Engine::memory_plan() const { return impl_->plan; }

}  // namespace hostlm
