// Modelfile commands -> CreateRequest (what `ollama create` sends, spec 1.2 and 1.6), and
// the same request read from the JSON body of /api/create.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/modelfile.h"

namespace hostlm::ollama {
namespace fs = std::filesystem;
namespace {

std::string home_of(const std::string& user) {
  if (user.empty()) {
    if (const char* home = std::getenv("HOME"); home && *home) return home;
    if (const passwd* pw = ::getpwuid(::getuid())) return pw->pw_dir;
    throw bad_request("failed to get current user");
  }
  if (const passwd* pw = ::getpwnam(user.c_str())) return pw->pw_dir;
  throw bad_request("failed to find user '" + user + "'");
}

// Absolute paths as given, `~` and `~user` expanded, others relative to the Modelfile.
fs::path expand_path(const std::string& arg, const fs::path& dir) {
  fs::path p;
  if (!arg.empty() && arg[0] == '/') {
    p = arg;
  } else if (!arg.empty() && arg[0] == '~') {
    const size_t slash = arg.find('/');
    const std::string user =
        arg.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    p = home_of(user);
    if (slash != std::string::npos) p /= arg.substr(slash + 1);
  } else {
    p = dir / arg;
  }
  return fs::absolute(p).lexically_normal();
}

// Ollama's choice of weight files in a folder (spec 1.2, `FROM <directory>`).
std::vector<fs::path> files_for_model(const fs::path& dir) {
  auto glob = [](const fs::path& d, auto match) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && match(name)) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto starts = [](const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; };
  auto ends = [](const std::string& s, std::string_view x) {
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  auto subdirs = [](const fs::path& d) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.is_directory()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<fs::path> files;
  auto model_st = [&](const std::string& n) {
    return starts(n, "model") && ends(n, ".safetensors");
  };
  if (auto st = glob(dir, model_st); !st.empty()) {
    files = st;
    for (const auto& sub : subdirs(dir))
      for (auto& f : glob(sub, model_st)) files.push_back(f);
  } else if (auto c = glob(
                 dir,
                 [&](auto& n) { return starts(n, "consolidated") && ends(n, ".safetensors"); });
             !c.empty()) {
    files = c;
  } else if (auto pt =
                 glob(dir, [&](auto& n) { return starts(n, "pytorch_model") && ends(n, ".bin"); });
             !pt.empty()) {
    files = pt;
  } else if (auto pth =
                 glob(dir, [&](auto& n) { return starts(n, "consolidated") && ends(n, ".pth"); });
             !pth.empty()) {
    files = pth;
  } else if (auto gg = glob(dir, [&](auto& n) { return ends(n, ".gguf"); }); !gg.empty()) {
    files = gg;
  } else if (auto bin = glob(dir, [&](auto& n) { return ends(n, ".bin"); }); !bin.empty()) {
    files = bin;
  } else {
    throw bad_request("no Modelfile or safetensors files found");
  }
  auto is_json = [&](const std::string& n) { return ends(n, ".json"); };
  for (auto& f : glob(dir, is_json)) files.push_back(f);
  for (const auto& sub : subdirs(dir))
    for (auto& f : glob(sub, is_json)) files.push_back(f);
  for (auto& f : glob(dir, [](auto& n) { return n == "chat_template.jinja"; })) files.push_back(f);
  if (auto tk = glob(dir, [](auto& n) { return n == "tokenizer.model"; }); !tk.empty()) {
    files.push_back(tk[0]);
  } else {
    for (const auto& sub : subdirs(dir))
      for (auto& f : glob(sub, [](auto& n) { return n == "tokenizer.model"; })) files.push_back(f);
  }
  return files;
}

// name relative to the FROM folder (or the file's own name) -> resolved local path.
void add_local_files(const fs::path& path, std::map<std::string, fs::path>& out) {
  if (!fs::is_directory(path)) {
    out[path.filename().string()] = fs::canonical(path);
    return;
  }
  const fs::path root = fs::canonical(path);
  for (const fs::path& f : files_for_model(path)) {
    const fs::path real = fs::canonical(f);
    const fs::path rel = real.lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..") {
      const std::string shown = f.lexically_relative(path).string();
      throw bad_request("insecure path: " + shown +
                        (real.string().find(".cache") != std::string::npos
                             ? "\n\nUse --local-dir <dir> when downloading model to disable caching"
                             : ""));
    }
    out[rel.generic_string()] = real;
  }
}

// io/fs.ValidPath: a relative, slash-separated path without "." or ".." elements.
bool valid_relative_path(const std::string& name) {
  if (name == ".") return true;
  if (name.empty() || name.front() == '/' || name.back() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part(name.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

std::map<std::string, std::string> digest_map(const nlohmann::json& j, const char* what) {
  std::map<std::string, std::string> out;
  if (j.is_null()) return out;
  if (!j.is_object()) throw bad_request(std::string(what) + " must be a JSON object");
  for (const auto& [name, digest] : j.items()) {
    if (!valid_relative_path(name)) throw bad_request("file path must be relative");
    if (!digest.is_string() || digest.get<std::string>().empty())
      throw bad_request("invalid digest format");
    out[name] = normalize_digest(digest.get<std::string>());
  }
  return out;
}

std::optional<std::string> optional_string(const nlohmann::json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw bad_request(std::string(key) + " must be a string");
  return it->get<std::string>();
}

}  // namespace

CreateRequest to_create_request(const Modelfile& modelfile, const fs::path& dir) {
  CreateRequest req;
  for (const ModelfileCommand& c : modelfile.commands) {
    const std::string at = "(line " + std::to_string(c.line) + "): ";
    if (c.name == "from") {
      const fs::path path = expand_path(c.args, dir);
      if (!fs::exists(path)) {
        req.from = c.args;
        continue;
      }
      try {
        add_local_files(path, req.local_files);
      } catch (const RequestError& e) {
        throw bad_request(at + e.what());
      }
    } else if (c.name == "adapter") {
      const fs::path path = expand_path(c.args, dir);
      if (!fs::exists(path)) throw bad_request(at + "adapter " + path.string() + " does not exist");
      req.local_adapters.clear();  // only one adapter: the last one wins
      add_local_files(path, req.local_adapters);
    } else if (c.name == "draft") {
      throw bad_request(at + "DRAFT (speculative draft models) is not supported yet");
    } else if (c.name == "template") {
      req.template_text = c.args;
    } else if (c.name == "system") {
      req.system = c.args;
    } else if (c.name == "license") {
      req.license.push_back(c.args);
    } else if (c.name == "renderer") {
      req.renderer = c.args;
    } else if (c.name == "parser") {
      req.parser = c.args;
    } else if (c.name == "requires") {
      req.requires_version = c.args;
    } else if (c.name == "message") {
      if (!req.messages) req.messages = nlohmann::ordered_json::array();
      req.messages->push_back({{"role", c.key}, {"content", c.args}});
    } else if (c.name == "parameter") {
      nlohmann::ordered_json value;
      try {
        value = parse_parameter(c.key, c.args);
      } catch (const RequestError& e) {
        throw bad_request(at + e.what());
      }
      if (value.is_null()) continue;  // deprecated: warned at parse time
      if (c.key == "stop") {
        auto& list = req.parameters[c.key];
        if (!list.is_array()) list = nlohmann::ordered_json::array();
        list.push_back(value);
      } else {
        req.parameters[c.key] = value;
      }
    }
  }
  return req;
}

CreateRequest CreateRequest::from_json(const nlohmann::json& body) {
  if (!body.is_object()) throw bad_request("request body must be a JSON object");
  CreateRequest req;
  req.from = optional_string(body, "from").value_or("");
  req.files = digest_map(body.value("files", nlohmann::json()), "files");
  req.adapters = digest_map(body.value("adapters", nlohmann::json()), "adapters");
  req.template_text = optional_string(body, "template");
  if (req.template_text && req.template_text->empty()) req.template_text.reset();
  req.system = optional_string(body, "system");
  if (req.system && req.system->empty()) req.system.reset();
  if (const auto it = body.find("license"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      if (!it->get<std::string>().empty()) req.license.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      for (const auto& l : *it) {
        if (!l.is_string()) throw bad_request("license must be a string or a list of strings");
        req.license.push_back(l.get<std::string>());
      }
    } else {
      throw bad_request("license must be a string or a list of strings");
    }
  }
  req.parameters = check_parameters(body.value("parameters", nlohmann::json()), true);
  if (const auto it = body.find("messages"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) throw bad_request("messages must be a list");
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& m : *it) {
      if (!m.is_object() || !m.value("role", nlohmann::json()).is_string())
        throw bad_request("each message needs a role and a content");
      const nlohmann::json content = m.value("content", nlohmann::json(""));
      if (!content.is_string() && !content.is_null())
        throw bad_request("a message's content must be a string");
      list.push_back({{"role", m["role"]}, {"content", content.is_null() ? "" : content}});
    }
    if (!list.empty()) req.messages = list;
  }
  req.renderer = optional_string(body, "renderer");
  req.parser = optional_string(body, "parser");
  req.requires_version = optional_string(body, "requires");
  if (req.renderer && req.renderer->empty()) req.renderer.reset();
  if (req.parser && req.parser->empty()) req.parser.reset();
  if (req.requires_version && req.requires_version->empty()) req.requires_version.reset();
  req.quantize = optional_string(body, "quantize")
                     .value_or(optional_string(body, "quantization").value_or(""));
  if (!body.value("draft_files", nlohmann::json()).is_null())
    throw bad_request("draft models are not supported yet");
  return req;
}

}  // namespace hostlm::ollama
