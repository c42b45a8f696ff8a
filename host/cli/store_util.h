// What the model-store subcommands (create, list, show, rm, cp) share: the store, progress
// on standard error, and Ollama's human-readable sizes and ages.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "hostlm/ollama/store.h"

namespace hostlm::cli {

// $HOSTLM_MODELS or ~/.hostlm/models, with the Ollama store as a read-only source.
ollama::ModelStore open_model_store();

// A MODEL argument of run, logits, tokenize, ...: an existing path as it is, else the GGUF
// weights of the store model of that name (returned through `stored` when given), else the
// argument unchanged so that the command reports the missing file.
std::string resolve_model(const std::string& arg,
                          std::optional<ollama::StoredModel>* stored = nullptr);

// Draws create/pull progress on standard error: a bar with percentage for steps with a
// total (on a terminal, redrawn in place), one line per other status.
class ProgressPrinter {
 public:
  ProgressPrinter();
  ~ProgressPrinter();
  void operator()(const ollama::Progress& p);

 private:
  void finish_bar();
  bool tty_;
  std::string bar_status_;
  int last_percent_ = -1;
  std::string last_status_;
};

// Ollama's format.HumanBytes ("4.7 GB", "397 MB") and HumanTime ("2 hours ago").
std::string human_bytes(uint64_t bytes);
std::string human_time(std::chrono::system_clock::time_point t);

}  // namespace hostlm::cli
