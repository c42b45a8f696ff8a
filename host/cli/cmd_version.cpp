// `hostlm version`: version, commit, and which backends this build has and can use here.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm::cli {

void add_version_command(CLI::App& app) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("version", "Print the version, commit and usable backends");
  cmd->add_flag("--json", *as_json, "print JSON");
  cmd->callback([as_json] {
    nlohmann::json backends = nlohmann::json::object();
    for (const char* name : {"cpu", "cuda"}) {
      try {
        create_backend(name);
        backends[name] = "available";
      } catch (const Error& e) {
        backends[name] = std::string("unavailable: ") + e.what();
      }
    }
    if (*as_json) {
      const nlohmann::json out = {
          {"version", HOSTLM_VERSION_STRING}, {"commit", HOSTLM_COMMIT}, {"backends", backends}};
      std::printf("%s\n", out.dump().c_str());
      return;
    }
    std::printf("hostlm %s (commit %s)\n", HOSTLM_VERSION_STRING, HOSTLM_COMMIT);
    for (const auto& [name, state] : backends.items())
      std::printf("  backend %-5s %s\n", name.c_str(), state.get<std::string>().c_str());
  });
}

}  // namespace hostlm::cli
