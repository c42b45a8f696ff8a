// Modelfiles (ecosystem spec 1.1-1.5): parsing into commands, turning them into a create
// request, typing PARAMETER values, and writing a stored model back as a Modelfile.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/ollama/store.h"

namespace hostlm::ollama {

struct ModelfileCommand {
  std::string name;  // lower case: from, parameter, template, system, adapter, license,
                     // message, requires, renderer, parser, draft
  std::string key;   // parameter: its name; message: the role; else empty
  std::string args;  // the value, quotes stripped
  int line = 0;      // 1-based line where the instruction starts
};

struct Modelfile {
  std::vector<ModelfileCommand> commands;
  std::vector<std::string> warnings;  // "(line N): parameter <name> is deprecated"
};

// Parses Modelfile text. Errors are RequestError(kBadRequest) with Ollama's messages
// prefixed by the line: "(line 3): command must be one of ...", "(line 7): unknown
// parameter 'foo'", "no FROM line", "(line 2): unexpected EOF" ...
Modelfile parse_modelfile(std::string_view text);
// Reads and parses a file; errors are prefixed with the path.
Modelfile read_modelfile(const std::filesystem::path& path);

// What `ollama create` sends for this Modelfile. Paths (FROM, ADAPTER) are resolved
// against `dir` (with `~` expanded, symlinks resolved) and land in local_files /
// local_adapters; a FROM that is not an existing path is a model name (`from`).
CreateRequest to_create_request(const Modelfile& modelfile, const std::filesystem::path& dir);

// The typed JSON value of PARAMETER `name` (int, float, bool, string; "stop" gives a
// string). Throws RequestError: "unknown parameter '<name>'", "invalid int value [<v>]",
// "invalid float value [<v>]", "invalid bool value [<v>]". Sets *deprecated for the
// parameters Ollama ignores with a warning.
nlohmann::ordered_json parse_parameter(std::string_view name, std::string_view value,
                                       bool* deprecated = nullptr);
// Type-checks a JSON object of parameters (request `options`, /api/create `parameters`):
// numbers converted to the field's type, "stop" as string or array. Unknown or deprecated
// keys are an error when `strict`, else left out and named in *ignored.
nlohmann::ordered_json check_parameters(const nlohmann::json& params, bool strict,
                                        std::vector<std::string>* ignored = nullptr);

// `ollama show --modelfile` text for a stored model (spec 1.5).
std::string format_modelfile(const StoredModel& model);
// `/api/show` "parameters" text: one `<name padded to 30> <value>` line per value, strings
// Go-quoted.
std::string format_parameters(const nlohmann::json& params);

}  // namespace hostlm::ollama
