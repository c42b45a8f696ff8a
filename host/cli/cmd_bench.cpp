// `hostlm bench MODEL [-p 512] [-n 128] [-d DEPTH] [-t THREADS] [-r REPS] [-o md|json]`:
// prompt processing and generation speed in the manner of llama-bench.
//
// pp<P>: one forward pass over P random tokens (logits of the last only), timed.
// tg<N>: N single-token steps, timed. With -d D, both start after a D-token prefix, which is
// evaluated untimed (llama-bench's "@ dD"). Each test runs once untimed (warm-up), then R
// times; the table shows the mean and standard deviation of the R rates.
//
// --parallel, --format and --ttft-prefix switch to the serving modes (bench_serving.h):
// generation through the Engine as `hostlm serve` runs it, with N concurrent streams, with
// and without a grammar constraint, and the time to first token after a cached prefix.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "bench_serving.h"
#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/kv_cache.h"
#include "hostlm/tokenizer.h"

namespace hostlm::cli {
namespace {

std::vector<int> parse_int_list(const std::string& text, const char* what) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw Error(std::string(what) + ": '" + item + "' is not a non-negative integer");
    }
  }
  if (out.empty()) throw Error(std::string(what) + ": no value given");
  return out;
}

struct ModelSummary {
  std::string name;
  uint64_t bytes = 0, params = 0;
};

std::string file_type_name(int64_t id) {
  switch (id) {
    case 0:
      return "F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 7:
      return "Q8_0";
    case 14:
      return "Q4_K - Small";
    case 15:
      return "Q4_K - Medium";
    case 17:
      return "Q5_K - Medium";
    case 18:
      return "Q6_K";
    case 30:
      return "IQ4_XS - 4.25 bpw";
    case 32:
      return "BF16";
    default:
      return "type " + std::to_string(id);
  }
}

ModelSummary summarize(const ModelFiles& files) {
  ModelSummary s;
  s.name = files.architecture;
  if (files.gguf != nullptr) {
    for (const GgufTensorInfo& t : files.gguf->tensors()) {
      s.bytes += t.nbytes;
      uint64_t n = 1;
      for (uint64_t d : t.ne) n *= d;
      s.params += n;
    }
    if (auto ft = files.gguf->get_int("general.file_type")) s.name += " " + file_type_name(*ft);
  } else if (files.hf != nullptr) {
    for (const TensorView& t : files.hf->tensors()) {
      s.bytes += t.nbytes;
      s.params += static_cast<uint64_t>(t.n_elements());
    }
    s.name += " (safetensors)";
  }
  return s;
}

struct Result {
  std::string test;
  int threads = 0, n_prompt = 0, n_gen = 0, depth = 0;
  std::vector<double> rates;  // tokens per second, one per repetition
  double mean() const {
    double s = 0;
    for (double r : rates) s += r;
    return rates.empty() ? 0 : s / static_cast<double>(rates.size());
  }
  double stddev() const {
    if (rates.size() < 2) return 0;
    const double m = mean();
    double s = 0;
    for (double r : rates) s += (r - m) * (r - m);
    return std::sqrt(s / static_cast<double>(rates.size() - 1));
  }
};

// The grammar of --format, with `hostlm run --format`'s meaning: "json" (any JSON object), a
// JSON Schema file, or a schema given inline.
std::shared_ptr<const Grammar> format_grammar(const std::string& format) {
  if (format == "json") return std::make_shared<const Grammar>(Grammar::json_object());
  const bool inline_schema = format.front() == '{';
  // A file that cannot be read or parsed gives an error naming it.
  const std::string text = inline_schema ? format : read_json_file(format).dump();
  try {
    return std::make_shared<const Grammar>(Grammar::from_json_schema(std::string_view(text)));
  } catch (const std::exception& e) {
    throw Error("--format " + (inline_schema ? std::string("schema") : format) + ": " + e.what());
  }
}

// The one value a serving mode takes from a -p / -n list.
int single_value(const std::vector<int>& values, const char* what) {
  if (values.size() != 1 || values.front() < 1)
    throw Error(std::string(what) + ": the serving modes take one positive value");
  return values.front();
}

struct BenchArgs {
  std::string model, prompt = "512", gen = "128", depth = "0", threads, output = "md";
  std::string backend = "auto";
  int reps = 5;
  // The serving modes.
  std::string parallel, format, kv_type = "f16";
  int ttft_prefix = 0, ttft_new = 32;
  int64_t batch = 0;
  int cpu_moe_layers = 0;
  std::string state_type;
};

void run_serving_modes(const BenchArgs& a, bool reps_given) {
  ServingBenchConfig config;
  config.n_prompt = single_value(parse_int_list(a.prompt, "-p"), "-p");
  config.n_gen = single_value(parse_int_list(a.gen, "-n"), "-n");
  if (a.depth != "0") throw Error("-d: not used by the serving modes");
  if (!a.parallel.empty()) config.parallel = parse_int_list(a.parallel, "--parallel");
  if (config.parallel.empty() && !a.format.empty()) config.parallel = {1};
  config.ttft_prefix = a.ttft_prefix;
  config.ttft_new = a.ttft_new;
  config.reps = reps_given ? a.reps : 1;
  config.kv_type = parse_kv_type(a.kv_type);
  // Compiled before the model loads, so a bad schema fails fast.
  if (!a.format.empty()) {
    config.grammar = format_grammar(a.format);
    config.format_name = a.format.front() == '{' ? "schema" : a.format;
  }
  std::vector<int> threads =
      a.threads.empty() ? std::vector<int>{0} : parse_int_list(a.threads, "-t");
  if (threads.size() != 1) throw Error("-t: the serving modes take one thread count");

  ModelLoadOptions options;
  options.backend = a.backend;
  options.threads = threads.front();
  options.cpu_moe_layers = a.cpu_moe_layers;
  if (!a.state_type.empty()) options.recurrent_state = parse_state_type(a.state_type);
  if (a.batch > 0) options.max_batch = a.batch;  // else what `hostlm serve` uses
  // The longest window run_serving_bench gives a request.
  options.context = std::max(int64_t{config.n_prompt} + config.n_gen,
                             int64_t{config.ttft_prefix} + config.ttft_new + 1);
  if (!config.parallel.empty())
    options.max_sequences = *std::max_element(config.parallel.begin(), config.parallel.end());
  PluginRegistry& registry = plugin_registry();  // outlives errors thrown by plugins
  LoadedModel loaded(registry, a.model, options);
  if (config.grammar) {
    // The vocabulary the server builds for the model (ServedModel::grammar_vocab).
    const Tokenizer tokenizer = Tokenizer::load(a.model);
    config.vocab = std::make_shared<const GrammarVocab>(tokenizer);
  }
  const ServingBenchReport report = run_serving_bench(loaded.model(), config);
  const ModelSummary summary = summarize(loaded.files());
  const std::string backend = loaded.backend().name();
  const int shown_threads =
      threads.front() > 0 ? threads.front()
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (a.output == "json") {
    const nlohmann::ordered_json common = {{"model_filename", a.model},
                                           {"model_type", summary.name},
                                           {"model_size", summary.bytes},
                                           {"model_n_params", summary.params},
                                           {"backend", backend},
                                           {"n_threads", shown_threads},
                                           {"n_batch", loaded.model().max_batch_tokens()},
                                           {"kv_type", a.kv_type}};
    write_stdout(serving_report_json(report, config, common).dump(2) + "\n");
    return;
  }
  char notes[256];
  std::snprintf(notes, sizeof notes,
                "engine: %lld tokens per step, KV %s, recurrent states %s, sampling as hostlm "
                "serve (temperature 0.8, top_k 40, top_p 0.9), %d repetition(s)\n\n",
                static_cast<long long>(loaded.model().max_batch_tokens()), a.kv_type.c_str(),
                a.state_type.empty() ? "f32" : a.state_type.c_str(), config.reps);
  write_stdout(notes + serving_report_markdown(report, config, summary.name, backend));
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure prompt processing and generation speed (like llama-bench)");
  cmd->add_option("model", args->model, "GGUF file or Hugging Face folder")->required();
  cmd->add_option("-p,--n-prompt", args->prompt, "prompt lengths, comma-separated (0: none)");
  cmd->add_option("-n,--n-gen", args->gen, "generated token counts, comma-separated (0: none)");
  cmd->add_option("-d,--n-depth", args->depth,
                  "context already filled before each test, comma-separated");
  cmd->add_option("-t,--threads", args->threads,
                  "thread counts, comma-separated (default: one per core)");
  CLI::Option* reps = cmd->add_option("-r,--repetitions", args->reps,
                                      "timed runs per test (serving modes: default 1)")
                          ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", args->output, "md or json")->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--backend", args->backend, "cpu, cuda or auto")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  add_cpu_moe_options(*cmd, args->cpu_moe_layers);
  add_state_type_option(*cmd, args->state_type);
  cmd->add_option("--parallel", args->parallel,
                  "serving mode: concurrent streams through the engine, comma-separated "
                  "(each: one -p prompt, -n tokens)");
  cmd->add_option("--format", args->format,
                  "serving mode: also generate held to json or a JSON Schema (file or inline), "
                  "as hostlm run --format; reports both and the ratio");
  cmd->add_option("--ttft-prefix", args->ttft_prefix,
                  "serving mode: time to first token for a cached prefix of this many tokens "
                  "plus --ttft-new more, and the prefix's cold prefill")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ttft-new", args->ttft_new, "tokens appended to the cached prefix")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--kv-type", args->kv_type,
                  "KV cache type of the full-attention layers (llama-bench's -ctk/-ctv "
                  "default, f16, unless given)")
      ->check(CLI::IsMember({"f16", "q8_0", "f32"}));
  CLI::Option* batch =
      cmd->add_option("-b,--batch-size", args->batch,
                      "serving mode: tokens per engine step (default: as hostlm serve)")
          ->check(CLI::PositiveNumber);
  cmd->callback([args, reps, batch] {
    if (!args->parallel.empty() || !args->format.empty() || args->ttft_prefix > 0) {
      run_serving_modes(*args, reps->count() > 0);
      return;
    }
    if (batch->count() > 0)
      throw Error("-b belongs to the serving modes (--parallel, --format, --ttft-prefix)");
    const DType kv = parse_kv_type(args->kv_type);
    const std::vector<int> prompts = parse_int_list(args->prompt, "-p");
    const std::vector<int> gens = parse_int_list(args->gen, "-n");
    const std::vector<int> depths = parse_int_list(args->depth, "-d");
    std::vector<int> threads =
        args->threads.empty() ? std::vector<int>{0} : parse_int_list(args->threads, "-t");
    int max_prompt = 1;
    for (int p : prompts) max_prompt = std::max(max_prompt, p);
    // The depth prefix is prefilled in batches of up to 512 tokens (llama-bench's micro-batch)
    // also when no prompt test asks for a batch: token by token, a 65,536-token prefix of the
    // 27B took longer than 200 s on an H200.
    int max_depth = 0;
    for (int d : depths) max_depth = std::max(max_depth, d);
    const int max_batch = std::max(max_prompt, std::min(max_depth, 512));
    int max_ctx = 1;
    for (int d : depths)
      for (int p : prompts)
        for (int n : gens) max_ctx = std::max(max_ctx, d + std::max(p, n));

    ModelLoadOptions options;
    options.backend = args->backend;
    options.threads = threads.front();
    options.cpu_moe_layers = args->cpu_moe_layers;
    if (!args->state_type.empty()) options.recurrent_state = parse_state_type(args->state_type);
    options.max_batch = max_batch;
    options.max_sequences = 1;                     // llama-bench's form: one sequence
    PluginRegistry& registry = plugin_registry();  // outlives errors thrown by plugins
    LoadedModel loaded(registry, args->model, options);
    Model& model = loaded.model();
    const ModelSummary summary = summarize(loaded.files());
    const int64_t V = model.info().n_vocab;
    std::vector<float> logits(static_cast<size_t>(V));
    // Page-locked like the engine's logits rows (and llama.cpp's output buffer): from pageable
    // memory the download of each generated token's logits is staged by the driver.
    loaded.backend().pin_host(logits.data(), logits.size() * sizeof(float));
    struct Unpin {
      Backend& backend;
      void* p;
      ~Unpin() { backend.unpin_host(p); }
    } unpin{loaded.backend(), logits.data()};
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(
        0, static_cast<int32_t>(std::min<int64_t>(V, 2048) - 1));
    auto random_tokens = [&](int n) {
      std::vector<int32_t> t(static_cast<size_t>(n));
      for (int32_t& v : t) v = pick(rng);
      return t;
    };
    using Clock = std::chrono::steady_clock;

    // The device's memory in use at its fullest (a test's sequence still alive), where the
    // backend has a device of its own: for comparing with other engines' VRAM figures.
    size_t device_used_peak = 0, device_total = 0;
    auto sample_device_memory = [&] {
      size_t used = 0;
      if (loaded.backend().device_memory(used, device_total))
        device_used_peak = std::max(device_used_peak, used);
    };
    std::vector<Result> results;
    for (int t : threads) {
      loaded.backend().set_threads(t);
      const int shown_threads =
          t > 0 ? t : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      // The depth prefix is evaluated once per depth, as llama-bench does, and each run
      // starts from it: a sequence of the shared page pool adopts its pages (a shared page is
      // copied before it is written) and a copy of its recurrent state, which waits in host
      // memory (llama-bench keeps its saved sequence state there too), so the device holds
      // one state slot at every depth. A model without the host's paged cache makes its own
      // sequences and evaluates the prefix every run.
      const CacheLayout layout = model.cache_layout();
      const bool paged = !layout.empty() && model.backend() != nullptr;
      std::unique_ptr<KvPagePool> pool;
      std::unique_ptr<RecurrentStateSlots> slots;
      if (paged) {
        const auto pages = [](int64_t n) { return (n + kKvPageTokens - 1) / kKvPageTokens; };
        int max_new = 1;
        for (int p : prompts) max_new = std::max(max_new, p);
        for (int n : gens) max_new = std::max(max_new, n);
        pool = std::make_unique<KvPagePool>(*model.backend(), layout, kv,
                                            pages(max_depth) + pages(max_new) + 2);
        slots = std::make_unique<RecurrentStateSlots>(*model.backend(), layout, 1);
      }
      std::optional<HeldPrefix> prefix;  // released before the pool
      if (paged) prefix.emplace(*pool);
      auto sequence_at = [&](int depth) -> std::unique_ptr<Sequence> {
        if (!paged) {
          auto seq = model.new_sequence(max_ctx);
          if (depth > 0) model.eval(*seq, random_tokens(depth), false, logits);
          return seq;
        }
        if (depth > 0 && depth != prefix->n_tokens()) {
          prefix->clear();  // its pages go back first
          KvSequence first(*pool, *slots, depth);
          model.eval(first, random_tokens(depth), false, logits);
          prefix->keep(first);
        }
        auto seq = std::make_unique<KvSequence>(*pool, *slots, max_ctx);
        if (depth > 0) prefix->restore(*seq);
        return seq;
      };
      auto run = [&](int depth, int n_prompt, int n_gen) {
        auto seq = sequence_at(depth);
        if (n_prompt > 0) {
          const std::vector<int32_t> prompt = random_tokens(n_prompt);
          const auto t0 = Clock::now();
          model.eval(*seq, prompt, false, logits);
          const double rate = n_prompt / std::chrono::duration<double>(Clock::now() - t0).count();
          sample_device_memory();
          return rate;
        }
        const std::vector<int32_t> gen = random_tokens(n_gen);
        const auto t0 = Clock::now();
        for (int i = 0; i < n_gen; ++i)
          model.eval(*seq, std::span<const int32_t>(&gen[i], 1), false, logits);
        const double rate = n_gen / std::chrono::duration<double>(Clock::now() - t0).count();
        sample_device_memory();
        return rate;
      };
      for (int depth : depths) {
        auto bench = [&](int n_prompt, int n_gen) {
          Result r;
          r.threads = shown_threads;
          r.n_prompt = n_prompt;
          r.n_gen = n_gen;
          r.depth = depth;
          r.test = (n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen)) +
                   (depth > 0 ? " @ d" + std::to_string(depth) : "");
          run(depth, n_prompt, n_gen);  // warm-up
          for (int i = 0; i < args->reps; ++i) r.rates.push_back(run(depth, n_prompt, n_gen));
          results.push_back(r);
        };
        for (int p : prompts)
          if (p > 0) bench(p, 0);
        for (int n : gens)
          if (n > 0) bench(0, n);
      }
    }

    const std::string backend = loaded.backend().name();
    if (args->output == "json") {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const Result& r : results) {
        out.push_back({{"model_filename", args->model},
                       {"model_type", summary.name},
                       {"model_size", summary.bytes},
                       {"model_n_params", summary.params},
                       {"backend", backend},
                       {"n_threads", r.threads},
                       {"n_batch", max_batch},  // tokens a forward pass takes, as llama-bench's
                       {"n_prompt", r.n_prompt},
                       {"n_gen", r.n_gen},
                       {"n_depth", r.depth},
                       {"kv_type", args->kv_type},
                       {"state_type", args->state_type.empty() ? "f32" : args->state_type},
                       {"test", r.test},
                       {"avg_ts", r.mean()},
                       {"stddev_ts", r.stddev()},
                       {"samples_ts", r.rates}});
        if (device_total > 0) {
          out.back()["device_memory_used_peak"] = device_used_peak;
          out.back()["device_memory_total"] = device_total;
        }
      }
      write_stdout(out.dump(2) + "\n");
      return;
    }
    std::string table = "| model | size | params | backend | threads | test | t/s |\n";
    table += "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n";
    char line[512];
    for (const Result& r : results) {
      std::snprintf(line, sizeof line, "| %s | %.2f MiB | %.2f B | %s | %d | %s | %.2f ± %.2f |\n",
                    summary.name.c_str(), static_cast<double>(summary.bytes) / 1048576.0,
                    static_cast<double>(summary.params) / 1e9, backend.c_str(), r.threads,
                    r.test.c_str(), r.mean(), r.stddev());
      table += line;
    }
    if (device_total > 0) {
      std::snprintf(line, sizeof line,
                    "\nGPU memory in use at the fullest: %.0f MiB of %.0f MiB (the whole device, "
                    "CUDA context included)\n",
                    static_cast<double>(device_used_peak) / 1048576.0,
                    static_cast<double>(device_total) / 1048576.0);
      table += line;
    }
    write_stdout(table);
  });
}

}  // namespace hostlm::cli
