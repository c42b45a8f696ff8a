// What a stored model is, as `ollama show` and /api/show report it: the GGUF metadata
// ("model_info"), the capabilities, and the text Ollama's CLI prints from a show response.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostlm/ollama/store.h"

namespace hostlm::ollama {

// /api/show "model_info": the GGUF metadata of a weights file (arrays over 64 entries
// emptied unless verbose) plus general.parameter_count, or what a Hugging Face folder's
// config.json says in GGUF terms. Throws hostlm::Error for a file that is not a GGUF.
nlohmann::ordered_json model_info(const std::filesystem::path& path, bool verbose);
// /api/show "tensors" (verbose): [{"name", "type" ("F32", "Q4_K", ...), "shape"}].
nlohmann::ordered_json model_tensors(const std::filesystem::path& gguf);

// Capabilities in Ollama's order: "completion", "vision" (a projector), then "tools" and
// "thinking" when the prompt format has them: a Go TEMPLATE that mentions .Tools /
// .Thinking, or hostlm's native Qwen3.5 format (no TEMPLATE, or a RENDERER).
std::vector<std::string> model_capabilities(const StoredModel& model);

// An /api/show body for a stored model (without "modified_at", which servers format):
// license, modelfile, parameters, template, system, renderer, parser, details, messages,
// model_info, projector_info, tensors (verbose), capabilities, requires.
nlohmann::ordered_json show_response(const StoredModel& model, bool verbose);

// The text `ollama show NAME [-v]` prints from an /api/show body (Ollama's cmd/cmd.go): the
// sections Model, Capabilities, Projector, Parameters, Metadata and Tensors (verbose),
// System and License (first two lines), each a borderless table indented by four spaces,
// columns padded to four spaces apart, cells wrapped at 30 columns (100 for System and
// License), and a blank line after each.
std::string format_show_info(const nlohmann::ordered_json& show, bool verbose);

}  // namespace hostlm::ollama
