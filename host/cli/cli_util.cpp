#include "cli_util.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "hostlm/error.h"
#include "hostlm/kv_cache.h"
#include "registry/layout.h"

namespace hostlm::cli {

std::vector<int32_t> parse_token_list(const std::string& text) {
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    int32_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 0)
      throw Error("--tokens: '" + item + "' is not a token id (expected e.g. 1,2,3)");
    out.push_back(value);
    pos = comma + 1;
  }
  if (out.empty()) throw Error("--tokens: no token ids given");
  return out;
}

void BackendFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--backend", backend, "cpu, cuda or auto (best available)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd.add_option("--threads", threads, "CPU threads (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--gpu-layers,--ngl", gpu_layers,
                 "layers on the GPU like llama.cpp's -ngl: -1 all (default), 0 none (CPU); "
                 "N in between: the last N layers on the GPU, the first ones on the CPU")
      ->check(CLI::Range(-1, 1 << 20));
  add_cpu_moe_options(cmd, cpu_moe_layers);
  add_state_type_option(cmd, state_type);
}

void add_state_type_option(CLI::App& cmd, std::string& state_type) {
  cmd.add_option("--state-type", state_type,
                 "element type of the linear layers' recurrent states: f32 (default, the "
                 "model's own), f16 or bf16 (half the memory; faster with many sequences)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
}

void add_cpu_moe_options(CLI::App& cmd, int& cpu_moe_layers) {
  cmd.add_option("--n-cpu-moe,--ncmoe", cpu_moe_layers,
                 "mixture-of-experts models: the experts of the first N layers on the CPU, the "
                 "rest of the model on the GPU, like llama.cpp's --n-cpu-moe (-1: all layers)")
      ->check(CLI::Range(-1, 1 << 20));
  cmd.add_flag_callback(
      "--cpu-moe", [&cpu_moe_layers] { cpu_moe_layers = -1; },
      "every layer's experts on the CPU (--n-cpu-moe -1)");
}

ModelLoadOptions BackendFlags::load_options() const {
  ModelLoadOptions o;
  o.backend = backend;
  o.threads = threads;
  o.gpu_layers = gpu_layers;
  o.cpu_moe_layers = cpu_moe_layers;
  if (!state_type.empty()) o.recurrent_state = parse_state_type(state_type);
  return o;
}

nlohmann::ordered_json read_json_file(const std::string& path) {
  try {
    if (path == "-") return nlohmann::ordered_json::parse(std::cin);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open");
    return nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
}

void write_stdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
    throw Error("cannot write to standard output");
}

PluginRegistry& plugin_registry() {
  static PluginRegistry registry;
  return registry;
}

std::unique_ptr<ChatFormat> chat_format_for(PluginRegistry& registry, const ModelFiles& files) {
  auto format = registry.plugin_for(files.architecture).chat_format(files);
  if (!format)
    throw Error("the plugin for architecture \"" + files.architecture +
                "\" has no chat format (use --tokens to give token ids)");
  return format;
}

std::string default_model_path() {
  if (const char* env = std::getenv("HOSTLM_DEFAULT_MODEL"); env && *env) return env;
  // Only a build tree knows its sources (through its marker file); an installed hostlm has
  // no model of its own and no source path compiled in.
  if (auto tree = registry::build_tree(); tree && !tree->source_dir.empty())
    return (tree->source_dir / "tests" / "data" / "models" / "tiny-tied-f32").string();
  throw Error("no MODEL given: name a .gguf file or a model folder (or set HOSTLM_DEFAULT_MODEL)");
}

}  // namespace hostlm::cli
