#include "hostlm/http/logger.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "hostlm/error.h"

namespace hostlm::http {
namespace {

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "ERROR";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kDebug:
      return "DEBUG";
  }
  return "INFO";
}

std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms.count()));
  return out;
}

// logfmt value: bare when it has no space, quote or equals sign, else a JSON string.
std::string text_value(const nlohmann::ordered_json& v) {
  const std::string quoted = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!v.is_string()) return quoted;
  const std::string& s = v.get_ref<const std::string&>();
  if (!s.empty() && s.find_first_of(" \"=\t\n") == std::string::npos) return s;
  return quoted;
}

}  // namespace

LogFormat parse_log_format(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  throw Error("log format must be text or json, not '" + std::string(text) + "'");
}

LogLevel parse_log_level(std::string_view text) {
  if (text == "error") return LogLevel::kError;
  if (text == "warn" || text == "warning") return LogLevel::kWarn;
  if (text == "info") return LogLevel::kInfo;
  if (text == "debug") return LogLevel::kDebug;
  throw Error("log level must be error, warn, info or debug, not '" + std::string(text) + "'");
}

const char* log_level_text(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "info";
}

void Logger::request(const std::string& method, const std::string& path, int status, double ms,
                     const RequestLog& fields, const std::string& remote) {
  const LogLevel level = status >= 500   ? LogLevel::kError
                         : status >= 400 ? LogLevel::kWarn
                                         : LogLevel::kInfo;
  if (!enabled(level)) return;
  nlohmann::ordered_json r = nlohmann::ordered_json::object();
  r["msg"] = "request";
  r["method"] = method;
  r["path"] = path;
  r["status"] = status;
  if (!fields.model.empty()) r["model"] = fields.model;
  if (fields.prompt_tokens >= 0) r["prompt_tokens"] = fields.prompt_tokens;
  if (fields.tokens >= 0) r["tokens"] = fields.tokens;
  if (!fields.done_reason.empty()) r["done_reason"] = fields.done_reason;
  r["ms"] = std::round(ms * 10.0) / 10.0;
  if (!remote.empty()) r["remote"] = remote;
  if (!fields.error.empty()) r["error"] = fields.error;
  write(level, std::move(r));
}

void Logger::event(LogLevel level, const std::string& message,
                   const nlohmann::ordered_json& fields) {
  if (!enabled(level)) return;
  nlohmann::ordered_json r = nlohmann::ordered_json::object();
  r["msg"] = message;
  if (fields.is_object())
    for (const auto& [key, value] : fields.items()) r[key] = value;
  write(level, std::move(r));
}

void Logger::write(LogLevel level, nlohmann::ordered_json record) {
  std::string line;
  if (format_ == LogFormat::kJson) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    out["time"] = now_rfc3339();
    out["level"] = level_name(level);
    for (const auto& [key, value] : record.items()) out[key] = value;
    line = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = "time=" + now_rfc3339() + " level=" + level_name(level);
    for (const auto& [key, value] : record.items()) line += " " + key + "=" + text_value(value);
  }
  line += '\n';
  std::lock_guard lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace hostlm::http
