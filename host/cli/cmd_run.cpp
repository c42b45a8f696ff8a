// `hostlm run [MODEL] --tokens 1,2,3 -n 32 [--temp 0 --seed S]`: generate token ids.
// `hostlm run [MODEL] --prompt TEXT`: answer one message, streamed as text.
// `hostlm run [MODEL]`: chat interactively on standard input.
// `--format json|SCHEMA.json` and `--grammar FILE.gbnf` keep the answers inside a grammar.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli_util.h"
#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/grammar.h"
#include "hostlm/sampler.h"
#include "hostlm/tokenizer.h"
#include "store_util.h"
#include "text_chat.h"

namespace hostlm::cli {
namespace {

struct RunArgs {
  std::string model, tokens = "1", prompt, system;
  std::string format, grammar_file;  // --format, --grammar
  int n_predict = 32;
  bool n_predict_given = false;
  SamplerParams sampling;
  BackendFlags backend;
  bool verbose = false;
  bool think = false, no_think = false, hide_thinking = false;
  int64_t ctx_size = 4096;
};

// `hostlm run` decodes one sequence: the model needs logits room for one row only.
ModelLoadOptions one_sequence(ModelLoadOptions options) {
  options.max_sequences = 1;
  return options;
}

// The token-id form. Outside checks compare its output: keep it exactly as it is.
void run_tokens(const RunArgs& a) {
  const std::vector<int32_t> prompt = parse_token_list(a.tokens);
  const std::string path = a.model.empty() ? default_model_path() : a.model;
  PluginRegistry& registry = plugin_registry();
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel loaded(registry, path, one_sequence(a.backend.load_options()));
  Model& model = loaded.model();
  const int64_t V = model.info().n_vocab;
  std::vector<float> logits(static_cast<size_t>(V));
  auto seq = model.new_sequence(static_cast<int64_t>(prompt.size()) + a.n_predict);
  Sampler sampler(a.sampling);
  const auto t1 = std::chrono::steady_clock::now();
  model.eval(*seq, prompt, false, logits);
  const auto t2 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.n_predict; ++i) {
    const int32_t next = sampler.sample(logits);
    std::printf(i ? ",%d" : "%d", next);
    std::fflush(stdout);
    if (i + 1 < a.n_predict) model.eval(*seq, std::span<const int32_t>(&next, 1), false, logits);
  }
  std::printf("\n");
  const auto t3 = std::chrono::steady_clock::now();
  if (a.verbose) {
    auto ms = [](auto x, auto y) {
      return std::chrono::duration<double, std::milli>(y - x).count();
    };
    std::fprintf(stderr,
                 "%s\nload %.1f ms, prompt %zu tokens %.1f ms, generated %d tokens %.1f ms (%.1f "
                 "tokens/s)\n",
                 model.info().description.c_str(), ms(t0, t1), prompt.size(), ms(t1, t2),
                 a.n_predict, ms(t2, t3), a.n_predict / (ms(t2, t3) / 1000.0));
  }
}

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string("cannot read the ") + what + " file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The grammar of --format / --grammar, or null. Compiled before the model loads, so a bad
// schema or grammar fails fast; errors name the file.
std::shared_ptr<const Grammar> grammar_from_args(const RunArgs& a) {
  if (!a.grammar_file.empty()) {
    const std::string text = read_text_file(a.grammar_file, "grammar");
    try {
      return std::make_shared<const Grammar>(Grammar::from_gbnf(text));
    } catch (const Error& e) {
      throw Error("--grammar " + a.grammar_file + ": " + e.what());
    }
  }
  if (a.format.empty()) return nullptr;
  if (a.format == "json") return std::make_shared<const Grammar>(Grammar::json_object());
  // Like Ollama's format field, a schema may also be given inline.
  const bool inline_schema = a.format.front() == '{';
  const std::string text = inline_schema ? a.format : read_text_file(a.format, "JSON schema");
  try {
    return std::make_shared<const Grammar>(Grammar::from_json_schema(std::string_view(text)));
  } catch (const std::exception& e) {
    throw Error("--format " + (inline_schema ? std::string("schema") : a.format) + ": " + e.what());
  }
}

void run_text(const RunArgs& a) {
  // Checked before the model loads, so a bad value fails fast.
  const Sampler check(a.sampling);
  const std::shared_ptr<const Grammar> grammar = grammar_from_args(a);
  const std::string path = a.model.empty() ? default_model_path() : a.model;
  // Declared so that destruction runs engine -> format -> model: they run plugin code.
  PluginRegistry& registry = plugin_registry();
  ModelLoadOptions load = one_sequence(a.backend.load_options());
  load.context = a.ctx_size;
  LoadedModel loaded(registry, path, load);
  const Tokenizer tokenizer = Tokenizer::load(path);
  const std::unique_ptr<ChatFormat> format = chat_format_for(registry, loaded.files());
  int64_t context = a.ctx_size;
  if (const int64_t trained = loaded.model().info().n_ctx_train; trained > 0)
    context = std::min(context, trained);
  ChatEngine engine(loaded.model(), tokenizer, *format, context);

  GenerationSettings generation;
  generation.sampling = a.sampling;
  generation.num_predict = a.n_predict_given ? a.n_predict : -1;
  generation.hide_thinking = a.hide_thinking;
  generation.verbose = a.verbose;
  // A constrained answer does not think unless asked to, as Ollama does for format: the
  // reasoning would spend tokens the structured answer needs.
  const Thinking thinking = a.think                 ? Thinking::kOn
                            : a.no_think || grammar ? Thinking::kOff
                                                    : Thinking::kDefault;
  if (grammar) {
    generation.constraint.grammar = grammar;
    generation.constraint.vocab = std::make_shared<const GrammarVocab>(tokenizer);
    // Thinking: the grammar applies to the answer after the reasoning block.
    if (const auto end_think = tokenizer.token_id("</think>"); end_think && a.think)
      generation.constraint.start_after = *end_think;
  }
  if (a.prompt.empty()) {
    run_interactive_chat(engine,
                         {.generation = generation, .thinking = thinking, .system = a.system});
    return;
  }
  Conversation conversation;
  if (!a.system.empty()) conversation.messages.push_back(text_message("system", a.system));
  conversation.messages.push_back(text_message("user", a.prompt));
  ChatRenderOptions options;
  options.thinking = thinking;
  Sampler sampler(a.sampling, generation.constraint);
  engine.respond(conversation, options, generation, sampler);
}

// A store model name: its GGUF weights, with its SYSTEM and PARAMETERs as defaults that
// flags given on the command line override.
void apply_store_defaults(RunArgs& a, const CLI::App& cmd) {
  std::optional<ollama::StoredModel> stored;
  a.model = resolve_model(a.model, &stored);
  if (!stored) return;
  auto given = [&](const char* flag) { return flag && cmd.get_option(flag)->count() > 0; };
  if (stored->system && !given("--system")) a.system = *stored->system;
  auto param = [&](const char* key, const char* flag) -> std::optional<double> {
    const auto it = stored->params.find(key);
    if (it == stored->params.end() || !it->is_number() || given(flag)) return std::nullopt;
    return it->get<double>();
  };
  if (auto v = param("temperature", "--temp")) a.sampling.temperature = static_cast<float>(*v);
  if (auto v = param("top_k", "--top-k")) a.sampling.top_k = static_cast<int>(*v);
  if (auto v = param("top_p", "--top-p")) a.sampling.top_p = static_cast<float>(*v);
  if (auto v = param("min_p", "--min-p")) a.sampling.min_p = static_cast<float>(*v);
  if (auto v = param("repeat_penalty", "--repeat-penalty"))
    a.sampling.repeat_penalty = static_cast<float>(*v);
  if (auto v = param("repeat_last_n", "--repeat-last-n"))
    a.sampling.repeat_last_n = static_cast<int>(*v);
  if (auto v = param("typical_p", nullptr)) a.sampling.typical_p = static_cast<float>(*v);
  if (auto v = param("presence_penalty", nullptr))
    a.sampling.presence_penalty = static_cast<float>(*v);
  if (auto v = param("frequency_penalty", nullptr))
    a.sampling.frequency_penalty = static_cast<float>(*v);
  if (auto v = param("seed", "--seed"); v && *v >= 0) a.sampling.seed = static_cast<uint64_t>(*v);
  if (auto v = param("num_ctx", "--ctx-size"); v && *v > 0) a.ctx_size = static_cast<int64_t>(*v);
  if (auto v = param("num_gpu", "--gpu-layers"); v && *v >= -1)
    a.backend.gpu_layers = static_cast<int>(*v);
  if (auto v = param("num_predict", "--n-predict"); v && *v >= 0) {
    a.n_predict = static_cast<int>(*v);
    a.n_predict_given = true;
  }
  // hostlm's `PARAMETER think false`: a model that answers without thinking by default.
  if (const auto t = stored->params.find("think");
      t != stored->params.end() && !given("--think") && !given("--no-think")) {
    const bool on = t->is_boolean() ? t->get<bool>() : t->is_string();
    (on ? a.think : a.no_think) = true;
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Chat with a model (--prompt, or interactively), or generate from token ids (--tokens)");
  cmd->add_option("model", args->model,
                  "GGUF file, Hugging Face folder or model of the store (default: the tiny "
                  "built-in model)");
  CLI::Option* tokens = cmd->add_option("--tokens", args->tokens,
                                        "comma-separated prompt token ids: print generated ids");
  CLI::Option* prompt =
      cmd->add_option("-p,--prompt", args->prompt,
                      "a message to answer (no --prompt, no --tokens: interactive chat)");
  prompt->excludes(tokens);
  cmd->add_option("--system", args->system, "system message")->excludes(tokens);
  CLI::Option* n = cmd->add_option(
      "-n,--n-predict,--num-predict", args->n_predict,
      "most tokens to generate (default: 32 for --tokens, else until the answer ends)");
  n->check(CLI::NonNegativeNumber);
  cmd->add_option("--temp,--temperature", args->sampling.temperature, "temperature (0: greedy)");
  cmd->add_option("--top-k", args->sampling.top_k, "top-k (0: off)");
  cmd->add_option("--top-p", args->sampling.top_p, "top-p (1: off)");
  cmd->add_option("--min-p", args->sampling.min_p, "min-p (0: off)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", args->sampling.repeat_penalty, "repeat penalty (1: off)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repeat-last-n", args->sampling.repeat_last_n,
                  "tokens the repeat penalty looks back on")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", args->sampling.seed, "sampling seed");
  CLI::Option* think = cmd->add_flag("--think", args->think, "think before answering");
  CLI::Option* no_think = cmd->add_flag("--no-think", args->no_think, "answer without thinking");
  think->excludes(no_think);
  think->excludes(tokens);
  no_think->excludes(tokens);
  cmd->add_flag("--hide-thinking", args->hide_thinking, "do not print the reasoning")
      ->excludes(tokens);
  cmd->add_option("-c,--ctx-size", args->ctx_size,
                  "context length in tokens for chat (capped by the model's)")
      ->check(CLI::PositiveNumber)
      ->excludes(tokens);
  CLI::Option* format = cmd->add_option(
      "--format", args->format,
      "answer in JSON: 'json' for any object, or a JSON Schema file (turns thinking off "
      "unless --think)");
  CLI::Option* grammar = cmd->add_option("--grammar", args->grammar_file,
                                         "answer in the grammar of a GBNF file (llama.cpp's "
                                         "syntax; turns thinking off unless --think)");
  format->excludes(tokens)->excludes(grammar);
  grammar->excludes(tokens);
  cmd->add_flag("-v,--verbose", args->verbose, "print prompt ids and timings to stderr");
  args->backend.add_to(*cmd);
  cmd->callback([args, tokens, n, cmd] {
    args->n_predict_given = n->count() > 0;
    apply_store_defaults(*args, *cmd);
    if (tokens->count() > 0) {
      run_tokens(*args);
    } else {
      run_text(*args);
    }
  });
}

}  // namespace hostlm::cli
