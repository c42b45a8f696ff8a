// The server's log: one line per request (method, path, model, status, tokens, ms) and a few
// events, on standard error, as logfmt-style text or as JSON lines (--log-format).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hostlm::http {

enum class LogFormat { kText, kJson };
enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

struct LogOptions {
  LogFormat format = LogFormat::kText;
  LogLevel level = LogLevel::kInfo;
};

// "text" / "json" and "error" / "warn" / "info" / "debug"; hostlm::Error otherwise.
LogFormat parse_log_format(std::string_view text);
LogLevel parse_log_level(std::string_view text);
// "error", "warn", "info", "debug": what parse_log_level reads back.
const char* log_level_text(LogLevel level);

// What a handler adds to its request's line.
struct RequestLog {
  std::string model;
  int64_t prompt_tokens = -1;  // -1: not a generation
  int64_t tokens = -1;
  std::string done_reason;
  std::string error;
};

class Logger {
 public:
  explicit Logger(LogOptions options) : format_(options.format), level_(options.level) {}
  bool enabled(LogLevel level) const { return level <= level_.load(); }
  // The level may change while serving (a settings reload); the format may not.
  void set_level(LogLevel level) { level_ = level; }
  LogLevel level() const { return level_; }
  // Requests answered 5xx log as errors, 4xx as warnings, the rest as info.
  void request(const std::string& method, const std::string& path, int status, double ms,
               const RequestLog& fields, const std::string& remote);
  // `fields`: a JSON object of extra key/values.
  void event(LogLevel level, const std::string& message,
             const nlohmann::ordered_json& fields = nlohmann::ordered_json::object());

 private:
  void write(LogLevel level, nlohmann::ordered_json record);

  const LogFormat format_;
  std::atomic<LogLevel> level_;
  std::mutex mutex_;
};

}  // namespace hostlm::http
