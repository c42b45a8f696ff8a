// Loading, sharing and unloading models by name.
//
// One entry per loaded (or loading) model name. Requests hold leases; when the last lease of
// a model goes, its keep-alive starts, and a reaper thread unloads it when that runs out.
// Models are destroyed outside the table's lock: an engine's destructor waits for its
// scheduler thread.
#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "serving/lease_state.h"

namespace hostlm {

using Clock = std::chrono::steady_clock;
using serving::LeaseState;

namespace {

struct Entry {
  ModelSpec spec;
  int64_t requested_context = 0;       // what it was loaded for (0: the server's default)
  int gpu_layers = -1;                 // the placement it was loaded with
  std::shared_ptr<ServedModel> model;  // null while loading
  bool loading = true;
  int users = 0;
  std::chrono::nanoseconds keep_alive{0};
  std::optional<Clock::time_point> expires_at;  // idle with a finite keep-alive
  bool unload_when_idle = false;
};

bool same_files(const ModelSpec& a, const ModelSpec& b) {
  return a.path == b.path && a.digest == b.digest;
}

}  // namespace

struct ModelManager::Impl : std::enable_shared_from_this<ModelManager::Impl> {
  PluginRegistry& registry;
  std::mutex registry_mutex;
  // Replaced as a whole by set_sources(); readers take a copy of the pointers.
  mutable std::mutex sources_mutex;
  std::vector<std::shared_ptr<const ModelSource>> sources;

  mutable std::mutex mutex;  // guards `options` too (set_live_options)
  ServingOptions options;
  std::condition_variable changed;  // loads finishing, expiry times changing, stopping
  std::map<std::string, std::shared_ptr<Entry>> entries;
  bool stopping = false;
  std::thread reaper;

  Impl(PluginRegistry& r, ServingOptions o, std::vector<std::shared_ptr<const ModelSource>> s)
      : registry(r), sources(std::move(s)), options(std::move(o)) {}

  void start() {
    reaper = std::thread([this] { reap(); });
  }

  void stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    if (reaper.joinable()) reaper.join();
    std::map<std::string, std::shared_ptr<Entry>> all;
    {
      std::lock_guard lock(mutex);
      all.swap(entries);
    }
    all.clear();  // engines cancel what runs and stop
  }

  std::vector<std::shared_ptr<const ModelSource>> current_sources() const {
    std::lock_guard lock(sources_mutex);
    return sources;
  }

  std::optional<ModelSpec> resolve(std::string_view name) const {
    for (const auto& source : current_sources())
      if (auto spec = source->find(name)) return spec;
    return std::nullopt;
  }

  int loaded_count() const { return static_cast<int>(entries.size()); }

  // Takes the idle entry that expires first out of the table (under the lock).
  std::shared_ptr<Entry> evict_one() {
    auto best = entries.end();
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      const Entry& e = *it->second;
      if (e.loading || e.users > 0) continue;
      if (best == entries.end() || e.expires_at.value_or(Clock::time_point::max()) <
                                       best->second->expires_at.value_or(Clock::time_point::max()))
        best = it;
    }
    if (best == entries.end()) return nullptr;
    auto e = best->second;
    entries.erase(best);
    return e;
  }

  ModelLease lease(const std::shared_ptr<Entry>& e, std::chrono::nanoseconds load) {
    std::weak_ptr<Impl> self = shared_from_this();
    auto state = std::make_shared<LeaseState>(e->model, load, [self, e] {
      if (auto impl = self.lock()) impl->release(e);
    });
    return ModelLease(std::move(state));
  }

  void release(const std::shared_ptr<Entry>& e) {
    std::shared_ptr<Entry> unload;
    {
      std::lock_guard lock(mutex);
      if (--e->users > 0) return;
      const auto it = entries.find(e->spec.name);
      const bool current = it != entries.end() && it->second == e;
      if (!current) return;  // replaced or removed meanwhile; the last lease frees it
      if (e->unload_when_idle || e->keep_alive == std::chrono::nanoseconds::zero()) {
        unload = e;
        entries.erase(it);
      } else if (e->keep_alive > std::chrono::nanoseconds::zero()) {
        e->expires_at = Clock::now() + e->keep_alive;
      }
    }
    changed.notify_all();
    // `unload` goes out of scope here, outside the lock.
  }

  ModelLease acquire(std::string_view name, const AcquireOptions& opts) {
    std::optional<ModelSpec> spec = resolve(name);
    if (!spec) throw ModelNotFound("model '" + std::string(name) + "' not found");
    const int64_t context = opts.context.value_or(0);
    const int gpu_layers = static_cast<int>(std::clamp<int64_t>(
        opts.gpu_layers.value_or(spec->defaults.num_gpu.value_or(options.load.gpu_layers)), -1,
        1 << 20));
    std::vector<std::shared_ptr<Entry>> dropped;  // destroyed after the lock is released
    std::shared_ptr<Entry> entry;
    ServingOptions load_options;
    {
      std::unique_lock lock(mutex);
      const std::chrono::nanoseconds keep_alive = opts.keep_alive.value_or(options.keep_alive);
      for (;;) {
        if (stopping) throw Error("the server is shutting down");
        const auto it = entries.find(spec->name);
        if (it == entries.end()) break;
        std::shared_ptr<Entry> e = it->second;
        if (e->loading) {
          changed.wait(lock);
          continue;
        }
        const bool fits = same_files(e->spec, *spec) &&
                          (context == 0 || context == e->requested_context) &&
                          gpu_layers == e->gpu_layers;
        if (fits || e->users > 0) {  // a busy model serves as loaded
          ++e->users;
          e->keep_alive = keep_alive;
          e->expires_at.reset();
          e->unload_when_idle = false;
          auto ready = e;
          lock.unlock();
          return lease(ready, std::chrono::nanoseconds::zero());
        }
        dropped.push_back(e);  // idle with other files or another context: reload
        entries.erase(it);
      }
      while (loaded_count() >= std::max(1, options.max_loaded)) {
        auto victim = evict_one();
        if (!victim)
          throw EngineBusy("server busy: " + std::to_string(loaded_count()) +
                           " models are loaded and in use (HOSTLM_MAX_LOADED_MODELS)");
        dropped.push_back(std::move(victim));
      }
      entry = std::make_shared<Entry>();
      entry->spec = *spec;
      entry->requested_context = context;
      entry->gpu_layers = gpu_layers;
      entry->keep_alive = keep_alive;
      entries[spec->name] = entry;
      load_options = options;
      load_options.load.gpu_layers = gpu_layers;
    }
    dropped.clear();
    const auto t0 = Clock::now();
    std::shared_ptr<ServedModel> model;
    try {
      model = std::make_shared<ServedModel>(registry, registry_mutex, *spec, load_options, context);
    } catch (...) {
      {
        std::lock_guard lock(mutex);
        const auto it = entries.find(spec->name);
        if (it != entries.end() && it->second == entry) entries.erase(it);
      }
      changed.notify_all();
      throw;
    }
    const auto load = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0);
    {
      std::lock_guard lock(mutex);
      // The queue bound may have changed while it loaded.
      model->engine().set_max_queue(options.max_queue);
      entry->model = std::move(model);
      entry->loading = false;
      entry->users = 1;
    }
    changed.notify_all();
    return lease(entry, load);
  }

  bool unload(std::string_view name) {
    std::shared_ptr<Entry> gone;
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(std::string(name));
      if (it == entries.end()) {
        // The name may be an alias the sources resolve to a loaded entry.
        if (auto spec = resolve(name)) it = entries.find(spec->name);
      }
      if (it == entries.end() || it->second->loading) return false;
      if (it->second->users > 0) {
        it->second->unload_when_idle = true;
        return true;
      }
      gone = it->second;
      entries.erase(it);
    }
    changed.notify_all();
    return true;
  }

  // Unloads idle models whose keep-alive ran out.
  void reap() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      std::optional<Clock::time_point> next;
      for (const auto& [name, e] : entries)
        if (!e->loading && e->users == 0 && e->expires_at)
          next = std::min(next.value_or(Clock::time_point::max()), *e->expires_at);
      if (!next) {
        changed.wait(lock);
        continue;
      }
      if (Clock::now() < *next) {
        changed.wait_until(lock, *next);
        continue;
      }
      std::vector<std::shared_ptr<Entry>> expired;
      for (auto it = entries.begin(); it != entries.end();) {
        const Entry& e = *it->second;
        if (!e.loading && e.users == 0 && e.expires_at && *e.expires_at <= Clock::now()) {
          expired.push_back(it->second);
          it = entries.erase(it);
        } else {
          ++it;
        }
      }
      lock.unlock();
      expired.clear();
      lock.lock();
    }
  }

  std::vector<LoadedModelStatus> loaded() const {
    std::lock_guard lock(mutex);
    std::vector<LoadedModelStatus> out;
    const auto now_steady = Clock::now();
    const auto now_system = std::chrono::system_clock::now();
    for (const auto& [name, e] : entries) {
      if (e->loading || !e->model) continue;
      LoadedModelStatus s;
      s.spec = e->spec;
      s.context = e->model->context();
      s.size = e->model->weights_size();
      s.backend = e->model->backend_name();
      s.size_vram = s.backend == "cpu" ? 0 : s.size;
      s.active = e->users;
      if (e->keep_alive >= std::chrono::nanoseconds::zero()) {
        const auto at = e->expires_at.value_or(now_steady + e->keep_alive);
        s.expires_at = now_system + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                        at - now_steady);
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  template <typename Count>
  size_t sum(Count count) const {
    std::lock_guard lock(mutex);
    size_t n = 0;
    for (const auto& [name, e] : entries)
      if (e->model) n += count(e->model->engine());
    return n;
  }
};

ModelManager::ModelManager(PluginRegistry& registry, ServingOptions options,
                           std::vector<std::shared_ptr<const ModelSource>> sources)
    : impl_(std::make_shared<Impl>(registry, std::move(options), std::move(sources))) {
  impl_->start();
}

ModelManager::~ModelManager() { impl_->stop(); }

std::optional<ModelSpec> ModelManager::resolve(std::string_view name) const {
  return impl_->resolve(name);
}

std::vector<ModelSpec> ModelManager::list() const {
  std::vector<ModelSpec> out;
  std::set<std::string> seen;
  for (const auto& source : impl_->current_sources())
    for (ModelSpec& spec : source->list())
      if (seen.insert(spec.name).second) out.push_back(std::move(spec));
  return out;
}

ModelLease ModelManager::acquire(std::string_view name, const AcquireOptions& options) {
  return impl_->acquire(name, options);
}

bool ModelManager::unload(std::string_view name) { return impl_->unload(name); }

std::vector<LoadedModelStatus> ModelManager::loaded() const { return impl_->loaded(); }

size_t ModelManager::running_requests() const {
  return impl_->sum([](Engine& e) { return e.running(); });
}

size_t ModelManager::queued_requests() const {
  return impl_->sum([](Engine& e) { return e.queued(); });
}

EngineMetrics ModelManager::metrics() const {
  EngineMetrics sum;
  std::lock_guard lock(impl_->mutex);
  for (const auto& [name, e] : impl_->entries) {
    if (!e->model) continue;
    const EngineMetrics m = e->model->engine().metrics();
    sum.running += m.running;
    sum.queued += m.queued;
    sum.requests_total += m.requests_total;
    sum.prompt_tokens_total += m.prompt_tokens_total;
    sum.prompt_tokens_computed_total += m.prompt_tokens_computed_total;
    sum.cached_tokens_total += m.cached_tokens_total;
    sum.generated_tokens_total += m.generated_tokens_total;
    sum.best_logits_draws_total += m.best_logits_draws_total;
    sum.generate_tokens_per_second += m.generate_tokens_per_second;
    sum.prompt_tokens_per_second += m.prompt_tokens_per_second;
    sum.kv_pages_total += m.kv_pages_total;
    sum.kv_pages_used += m.kv_pages_used;
    sum.kv_pages_cached += m.kv_pages_cached;
    sum.kv_pages_reserved += m.kv_pages_reserved;
    sum.state_snapshots += m.state_snapshots;
    sum.state_snapshot_slots += m.state_snapshot_slots;
    sum.prefix_cache_lookups += m.prefix_cache_lookups;
    sum.prefix_cache_hits += m.prefix_cache_hits;
    sum.steps_total += m.steps_total;
    sum.step_model_seconds_total += m.step_model_seconds_total;
    sum.step_host_seconds_total += m.step_host_seconds_total;
  }
  if (sum.prompt_tokens_total > 0)
    sum.prefix_cache_hit_rate =
        static_cast<double>(sum.cached_tokens_total) / static_cast<double>(sum.prompt_tokens_total);
  return sum;
}

void ModelManager::set_sources(std::vector<std::shared_ptr<const ModelSource>> sources) {
  std::lock_guard lock(impl_->sources_mutex);
  impl_->sources.swap(sources);
  // The old sources go when `sources` does, or when the last request using them ends.
}

ServingOptions ModelManager::options() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->options;
}

void ModelManager::set_live_options(const LiveOptions& live) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->options.keep_alive = live.keep_alive;
    impl_->options.max_queue = live.max_queue;
    impl_->options.max_loaded = live.max_loaded;
    for (const auto& [name, e] : impl_->entries)
      if (e->model) e->model->engine().set_max_queue(live.max_queue);
  }
  impl_->changed.notify_all();
}

// ---- ModelLease ----------------------------------------------------------------------------

ModelLease::ModelLease(std::shared_ptr<serving::LeaseState> state) : state_(std::move(state)) {}

const ModelSpec& ModelLease::spec() const { return state_->model->spec(); }
const ModelInfo& ModelLease::info() const { return state_->model->info(); }
const Tokenizer& ModelLease::tokenizer() const { return state_->model->tokenizer(); }
bool ModelLease::has_chat_format() const { return state_->model->format() != nullptr; }
int64_t ModelLease::context() const { return state_->model->context(); }
std::chrono::nanoseconds ModelLease::load_duration() const { return state_->load_duration; }

std::unique_ptr<TextStream> ModelLease::generate(TextRequest request) const {
  return serving::start_text_stream(state_, std::move(request));
}

std::string ModelLease::render(const TextRequest& request) const {
  return state_->model->prepare(request).text;
}

}  // namespace hostlm
