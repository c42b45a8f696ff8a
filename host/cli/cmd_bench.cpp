// `hostlm bench MODEL [-p 512] [-n 128] [-d DEPTH] [-t THREADS] [-r REPS] [-o md|json]`:
// prompt processing and generation speed in the manner of llama-bench.
//
// pp<P>: one forward pass over P random tokens (logits of the last only), timed.
// tg<N>: N single-token steps, timed. With -d D, both start after a D-token prefix, which is
// evaluated untimed (llama-bench's "@ dD"). Each test runs once untimed (warm-up), then R
// times; the table shows the mean and standard deviation of the R rates.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"

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

}  // namespace

void add_bench_command(CLI::App& app) {
  struct Args {
    std::string model, prompt = "512", gen = "128", depth = "0", threads, output = "md";
    std::string backend = "auto";
    int reps = 5;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure prompt processing and generation speed (like llama-bench)");
  cmd->add_option("model", args->model, "GGUF file or Hugging Face folder")->required();
  cmd->add_option("-p,--n-prompt", args->prompt, "prompt lengths, comma-separated (0: none)");
  cmd->add_option("-n,--n-gen", args->gen, "generated token counts, comma-separated (0: none)");
  cmd->add_option("-d,--n-depth", args->depth,
                  "context already filled before each test, comma-separated");
  cmd->add_option("-t,--threads", args->threads,
                  "thread counts, comma-separated (default: one per core)");
  cmd->add_option("-r,--repetitions", args->reps, "timed runs per test")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", args->output, "md or json")->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--backend", args->backend, "cpu, cuda or auto")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->callback([args] {
    const std::vector<int> prompts = parse_int_list(args->prompt, "-p");
    const std::vector<int> gens = parse_int_list(args->gen, "-n");
    const std::vector<int> depths = parse_int_list(args->depth, "-d");
    std::vector<int> threads =
        args->threads.empty() ? std::vector<int>{0} : parse_int_list(args->threads, "-t");
    int max_prompt = 1;
    for (int p : prompts) max_prompt = std::max(max_prompt, p);
    int max_ctx = 1;
    for (int d : depths)
      for (int p : prompts)
        for (int n : gens) max_ctx = std::max(max_ctx, d + std::max(p, n));

    ModelLoadOptions options;
    options.backend = args->backend;
    options.threads = threads.front();
    options.max_batch = max_prompt;
    PluginRegistry& registry = plugin_registry();  // outlives errors thrown by plugins
    LoadedModel loaded(registry, args->model, options);
    Model& model = loaded.model();
    const ModelSummary summary = summarize(loaded.files());
    const int64_t V = model.info().n_vocab;
    std::vector<float> logits(static_cast<size_t>(V));
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(
        0, static_cast<int32_t>(std::min<int64_t>(V, 2048) - 1));
    auto random_tokens = [&](int n) {
      std::vector<int32_t> t(static_cast<size_t>(n));
      for (int32_t& v : t) v = pick(rng);
      return t;
    };
    using Clock = std::chrono::steady_clock;

    std::vector<Result> results;
    for (int t : threads) {
      loaded.backend().set_threads(t);
      const int shown_threads =
          t > 0 ? t : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      auto run = [&](int depth, int n_prompt, int n_gen) {
        auto seq = model.new_sequence(max_ctx);
        if (depth > 0) model.eval(*seq, random_tokens(depth), false, logits);
        if (n_prompt > 0) {
          const std::vector<int32_t> prompt = random_tokens(n_prompt);
          const auto t0 = Clock::now();
          model.eval(*seq, prompt, false, logits);
          return n_prompt / std::chrono::duration<double>(Clock::now() - t0).count();
        }
        const std::vector<int32_t> gen = random_tokens(n_gen);
        const auto t0 = Clock::now();
        for (int i = 0; i < n_gen; ++i)
          model.eval(*seq, std::span<const int32_t>(&gen[i], 1), false, logits);
        return n_gen / std::chrono::duration<double>(Clock::now() - t0).count();
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
                       {"n_prompt", r.n_prompt},
                       {"n_gen", r.n_gen},
                       {"n_depth", r.depth},
                       {"test", r.test},
                       {"avg_ts", r.mean()},
                       {"stddev_ts", r.stddev()},
                       {"samples_ts", r.rates}});
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
    write_stdout(table);
  });
}

}  // namespace hostlm::cli
