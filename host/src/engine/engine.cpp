#include "hostlm/engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace hostlm {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Pending {
  Engine::RequestId id = 0;
  GenerationRequest request;
  Engine::OnToken on_token;
  Engine::OnDone on_done;
  Clock::time_point queued_at;
};

// A request the scheduler is working on: its sequence, sampler and progress.
struct Active {
  Pending p;
  std::unique_ptr<Sequence> seq;
  std::unique_ptr<Sampler> sampler;
  std::vector<float> logits;  // [n_vocab], the last position's
  int64_t prompt_done = 0;    // prompt tokens evaluated
  int32_t next_input = -1;    // token to feed in the next decode step
  GenerationResult result;
  Clock::time_point started, first_token;
  bool finished = false;
};

}  // namespace

struct Engine::Impl {
  Model& model;
  EngineOptions options;
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Pending> queue;
  std::vector<RequestId> cancelled;  // ids asked to stop, checked by the scheduler
  size_t n_running = 0;
  RequestId next_id = 1;
  bool stopping = false;
  std::thread scheduler;

  // Scheduler-thread state (no lock needed).
  std::vector<std::unique_ptr<Active>> active;
  std::vector<Model::BatchItem> batch;
  std::vector<Active*> batch_owner;

  Impl(Model& m, EngineOptions o) : model(m), options(o) {
    if (options.max_sequences < 1) options.max_sequences = 1;
    if (options.prefill_chunk <= 0) options.prefill_chunk = model.max_batch_tokens();
    batch.reserve(static_cast<size_t>(options.max_sequences));
    batch_owner.reserve(static_cast<size_t>(options.max_sequences));
    scheduler = std::thread([this] { run(); });
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

  void finish(Active& a, const std::string& reason) {
    if (a.finished) return;
    a.finished = true;
    const auto now = Clock::now();
    a.result.done_reason = reason;
    a.result.generate_ms = a.first_token == Clock::time_point{} ? 0 : ms_between(a.first_token, now);
    if (a.p.on_done) a.p.on_done(a.result);
  }

  // Moves queued requests into free sequence slots.
  void admit() {
    for (;;) {
      Pending p;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (queue.empty() || active.size() >= static_cast<size_t>(options.max_sequences)) return;
        p = std::move(queue.front());
        queue.pop_front();
        ++n_running;
      }
      auto a = std::make_unique<Active>();
      a->p = std::move(p);
      a->started = Clock::now();
      a->result.prompt_tokens = static_cast<int64_t>(a->p.request.prompt.size());
      a->result.queue_ms = ms_between(a->p.queued_at, a->started);
      try {
        a->seq = model.new_sequence(
            static_cast<int64_t>(a->p.request.prompt.size()) + a->p.request.max_tokens);
        a->sampler = std::make_unique<Sampler>(a->p.request.sampling, a->p.request.constraint);
        a->logits.resize(static_cast<size_t>(model.info().n_vocab));
      } catch (const std::exception& e) {
        a->result.error = e.what();
        finish(*a, "error");
        std::lock_guard<std::mutex> lock(mutex);
        --n_running;
        continue;
      }
      active.push_back(std::move(a));
    }
  }

  // One step: a token for every decoding request, then prompt chunks in the budget left.
  void step() {
    batch.clear();
    batch_owner.clear();
    int64_t budget = model.max_batch_tokens();
    for (auto& a : active)
      if (a->next_input >= 0 && budget > 0) {
        batch.push_back({a->seq.get(), std::span<const int32_t>(&a->next_input, 1), false, a->logits});
        batch_owner.push_back(a.get());
        --budget;
      }
    for (auto& a : active) {
      const auto& prompt = a->p.request.prompt;
      const int64_t left = static_cast<int64_t>(prompt.size()) - a->prompt_done;
      if (a->next_input >= 0 || left <= 0 || budget <= 0) continue;
      const int64_t chunk = std::min({left, budget, options.prefill_chunk});
      const bool completes = chunk == left;
      batch.push_back({a->seq.get(),
                       std::span<const int32_t>(prompt.data() + a->prompt_done, static_cast<size_t>(chunk)),
                       false, completes ? std::span<float>(a->logits) : std::span<float>()});
      batch_owner.push_back(a.get());
      budget -= chunk;
    }
    if (batch.empty()) return;
    try {
      model.eval_batch(batch);
    } catch (const std::exception& e) {
      for (Active* a : batch_owner) {
        a->result.error = e.what();
        finish(*a, "error");
      }
      return;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      Active& a = *batch_owner[i];
      if (a.next_input < 0) {
        a.prompt_done += static_cast<int64_t>(batch[i].tokens.size());
        if (a.prompt_done < static_cast<int64_t>(a.p.request.prompt.size())) continue;
        a.result.prompt_ms = ms_between(a.started, Clock::now());
        a.first_token = Clock::now();
      }
      const int32_t token = a.sampler->sample(a.logits);
      a.result.tokens.push_back(token);
      const bool keep_going = !a.p.on_token || a.p.on_token(token);
      const auto& stops = a.p.request.stop_tokens;
      const auto& constraint = a.p.request.constraint;
      const bool grammar_end =
          constraint && std::ranges::find(constraint.vocab->end_tokens(), token) !=
                            constraint.vocab->end_tokens().end();
      if (!keep_going) finish(a, "cancelled");
      else if (grammar_end || std::find(stops.begin(), stops.end(), token) != stops.end())
        finish(a, "stop");
      else if (static_cast<int64_t>(a.result.tokens.size()) >= a.p.request.max_tokens) finish(a, "length");
      else a.next_input = token;
    }
  }

  void retire_finished() {
    for (auto& a : active)
      if (!a->finished && take_cancel(a->p.id)) finish(*a, "cancelled");
    {
      // Ids of requests that are neither queued nor running (already done) are forgotten.
      std::lock_guard<std::mutex> lock(mutex);
      std::erase_if(cancelled, [&](RequestId id) {
        const bool queued_now = std::any_of(queue.begin(), queue.end(), [&](const Pending& p) { return p.id == id; });
        const bool running_now = std::any_of(active.begin(), active.end(), [&](const auto& a) { return a->p.id == id; });
        return !queued_now && !running_now;
      });
    }
    const size_t before = active.size();
    active.erase(std::remove_if(active.begin(), active.end(), [](const auto& a) { return a->finished; }),
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
      }
    }
    for (Pending& p : dropped) {
      GenerationResult r;
      r.done_reason = "cancelled";
      r.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
      r.queue_ms = ms_between(p.queued_at, Clock::now());
      if (p.on_done) p.on_done(r);
    }
  }

  void run() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty() || !active.empty(); });
        if (stopping) break;
      }
      drop_cancelled_queued();
      admit();
      retire_finished();
      step();
      retire_finished();
    }
    // Shutting down: every request still known ends as cancelled.
    for (auto& a : active) finish(*a, "cancelled");
    active.clear();
    std::deque<Pending> rest;
    {
      std::lock_guard<std::mutex> lock(mutex);
      rest.swap(queue);
    }
    for (Pending& p : rest) {
      GenerationResult r;
      r.done_reason = "cancelled";
      r.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
      if (p.on_done) p.on_done(r);
    }
  }
};

Engine::Engine(Model& model, EngineOptions options)
    : impl_(std::make_unique<Impl>(model, options)) {}

Engine::~Engine() = default;

Engine::RequestId Engine::submit(GenerationRequest request, OnToken on_token, OnDone on_done) {
  if (request.prompt.empty()) throw Error("the prompt has no tokens");
  if (request.max_tokens < 1) throw Error("max_tokens must be at least 1");
  const int64_t needed = static_cast<int64_t>(request.prompt.size()) + request.max_tokens;
  if (needed > impl_->options.context)
    throw Error("prompt (" + std::to_string(request.prompt.size()) + " tokens) plus max_tokens (" +
                std::to_string(request.max_tokens) + ") exceed the context of " +
                std::to_string(impl_->options.context) + " tokens");
  const int64_t vocab = impl_->model.info().n_vocab;
  for (int32_t t : request.prompt)
    if (t < 0 || t >= vocab)
      throw Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                  std::to_string(vocab - 1) + ")");
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->stopping) throw Error("the engine is shutting down");
  if (impl_->queue.size() >= impl_->options.max_queue)
    throw EngineBusy("server busy: " + std::to_string(impl_->queue.size()) +
                     " requests are already waiting");
  const RequestId id = impl_->next_id++;
  impl_->queue.push_back({id, std::move(request), std::move(on_token), std::move(on_done), Clock::now()});
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

}  // namespace hostlm
