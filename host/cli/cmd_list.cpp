// `hostlm list` (or `ls`): the models in the store, as `ollama list` prints them.
#include <algorithm>
#include <cstdio>

#include "cli_util.h"
#include "commands.h"
#include "store_util.h"

namespace hostlm::cli {

void add_list_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("list", "List the models in the store");
  cmd->alias("ls");
  cmd->callback([] {
    std::vector<std::string> problems;
    std::vector<ollama::StoredModel> models = open_model_store().list(&problems);
    for (const std::string& p : problems) std::fprintf(stderr, "warning: skipped %s\n", p.c_str());
    std::stable_sort(models.begin(), models.end(), [](const auto& a, const auto& b) {
      return a.modified_at > b.modified_at;  // newest first
    });
    std::vector<std::vector<std::string>> rows = {{"NAME", "ID", "SIZE", "MODIFIED"}};
    for (const auto& m : models)
      rows.push_back({m.name.display(), m.digest.substr(0, 12), human_bytes(m.size),
                      human_time(m.modified_at)});
    std::vector<size_t> width(4, 0);
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    std::string out;
    for (const auto& r : rows) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 3, ' ');
      }
      out += line + "\n";
    }
    write_stdout(out);
  });
}

}  // namespace hostlm::cli
