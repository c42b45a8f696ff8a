// `hostlm run [MODEL] --tokens 1,2,3 -n 32 [--temp 0 --seed S]`: generate token ids.
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/sampler.h"

namespace hostlm::cli {

void add_run_command(CLI::App& app) {
  struct Args {
    std::string model, tokens = "1";
    int n_predict = 32;
    SamplerParams sampling;
    BackendFlags backend;
    bool verbose = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Generate tokens from a prompt of token ids");
  cmd->add_option("model", args->model, "GGUF file or Hugging Face folder (default: the tiny built-in model)");
  cmd->add_option("--tokens", args->tokens, "comma-separated prompt token ids");
  cmd->add_option("-n,--n-predict", args->n_predict, "tokens to generate")->check(CLI::NonNegativeNumber);
  cmd->add_option("--temp", args->sampling.temperature, "temperature (0: greedy)");
  cmd->add_option("--top-k", args->sampling.top_k, "top-k (0: off)");
  cmd->add_option("--top-p", args->sampling.top_p, "top-p (1: off)");
  cmd->add_option("--seed", args->sampling.seed, "sampling seed");
  cmd->add_flag("-v,--verbose", args->verbose, "print timings to stderr");
  args->backend.add_to(*cmd);
  cmd->callback([args] {
    const std::vector<int32_t> prompt = parse_token_list(args->tokens);
    const std::string path = args->model.empty() ? default_model_path() : args->model;
    PluginRegistry registry;
    const auto t0 = std::chrono::steady_clock::now();
    LoadedModel loaded(registry, path, args->backend.load_options());
    Model& model = loaded.model();
    const int64_t V = model.info().n_vocab;
    std::vector<float> logits(static_cast<size_t>(V));
    auto seq = model.new_sequence(static_cast<int64_t>(prompt.size()) + args->n_predict);
    Sampler sampler(args->sampling);
    const auto t1 = std::chrono::steady_clock::now();
    model.eval(*seq, prompt, false, logits);
    const auto t2 = std::chrono::steady_clock::now();
    std::vector<int32_t> generated;
    for (int i = 0; i < args->n_predict; ++i) {
      const int32_t next = sampler.sample(logits);
      generated.push_back(next);
      std::printf(i ? ",%d" : "%d", next);
      std::fflush(stdout);
      if (i + 1 < args->n_predict) model.eval(*seq, std::span<const int32_t>(&next, 1), false, logits);
    }
    std::printf("\n");
    const auto t3 = std::chrono::steady_clock::now();
    if (args->verbose) {
      auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
      std::fprintf(stderr, "%s\nload %.1f ms, prompt %zu tokens %.1f ms, generated %d tokens %.1f ms (%.1f tokens/s)\n",
                   model.info().description.c_str(), ms(t0, t1), prompt.size(), ms(t1, t2),
                   args->n_predict, ms(t2, t3), args->n_predict / (ms(t2, t3) / 1000.0));
    }
  });
}

}  // namespace hostlm::cli
