// KEY=VALUE settings files in the form systemd's EnvironmentFile= reads (the service's
// /etc/default/hostlm), for `hostlm serve --config FILE`, which reads the file again on SIGHUP.
//
// Accepted: blank lines; comments (first non-blank character # or ;); KEY=VALUE with
// optional blanks around KEY and before VALUE; VALUE bare (trailing blanks dropped), in
// double quotes (escapes \" \\ \$ \` and \n) or in single quotes (taken literally). A key
// given twice keeps its last value, as systemd does. Anything else is an error naming the
// file and line.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace hostlm::cli {

struct EnvValue {
  std::string value;
  int line = 0;  // 1-based, where it was set
};
using EnvFile = std::map<std::string, EnvValue>;

// `origin` names the text in error messages ("FILE:LINE: ..."). Throws hostlm::Error.
EnvFile parse_env_file(std::string_view text, const std::string& origin);
// Reads and parses a file; hostlm::Error when it cannot be read (naming the reason).
EnvFile read_env_file(const std::filesystem::path& path);

}  // namespace hostlm::cli
