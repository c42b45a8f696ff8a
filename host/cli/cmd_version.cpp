// `hostlm version` and `hostlm --version`: version, commit, and which backends this build has
// and can use here.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"
#include "hostlm_commit.h"

namespace hostlm::cli {

std::string version_report(bool as_json) {
  nlohmann::json backends = nlohmann::json::object();
  for (const char* name : {"cpu", "cuda"}) {
    try {
      create_backend(name);
      backends[name] = "available";
    } catch (const Error& e) {
      backends[name] = std::string("unavailable: ") + e.what();
    }
  }
  if (as_json) {
    const nlohmann::json out = {
        {"version", HOSTLM_VERSION_STRING}, {"commit", HOSTLM_COMMIT}, {"backends", backends}};
    return out.dump();
  }
  std::string text =
      std::string("hostlm ") + HOSTLM_VERSION_STRING + " (commit " + HOSTLM_COMMIT + ")";
  for (const auto& [name, state] : backends.items()) {
    char line[64];
    std::snprintf(line, sizeof line, "\n  backend %-5s ", name.c_str());
    text += line + state.get<std::string>();
  }
  return text;
}

void add_version_command(CLI::App& app) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("version", "Print the version, commit and usable backends");
  cmd->add_flag("--json", *as_json, "print JSON");
  cmd->callback([as_json] { std::printf("%s\n", version_report(*as_json).c_str()); });
}

}  // namespace hostlm::cli
