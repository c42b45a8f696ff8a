#include "store_util.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "hostlm/error.h"

namespace hostlm::cli {

ollama::ModelStore open_model_store() { return ollama::ModelStore::open_default(); }

std::string resolve_model(const std::string& arg, std::optional<ollama::StoredModel>* stored) {
  std::error_code ec;
  if (arg.empty() || std::filesystem::exists(arg, ec) || !ollama::ModelName::try_parse(arg))
    return arg;
  std::optional<ollama::StoredModel> m = open_model_store().find(arg);
  if (!m) return arg;
  if (m->model_path.empty()) throw Error("model '" + arg + "' has no weights in the store");
  const std::string path = m->model_path.string();
  if (stored) *stored = std::move(m);
  return path;
}

ProgressPrinter::ProgressPrinter() : tty_(::isatty(STDERR_FILENO) != 0) {}

ProgressPrinter::~ProgressPrinter() { finish_bar(); }

void ProgressPrinter::finish_bar() {
  if (!bar_status_.empty() && tty_) std::fputc('\n', stderr);
  bar_status_.clear();
  last_percent_ = -1;
}

void ProgressPrinter::operator()(const ollama::Progress& p) {
  if (p.total == 0) {
    finish_bar();
    if (p.status != last_status_) std::fprintf(stderr, "%s\n", p.status.c_str());
    last_status_ = p.status;
    return;
  }
  const int percent =
      static_cast<int>(100.0 * static_cast<double>(p.completed) / static_cast<double>(p.total));
  if (p.status != bar_status_) {
    finish_bar();
    bar_status_ = p.status;
    last_status_ = p.status;
  }
  if (percent == last_percent_) return;
  last_percent_ = percent;
  const std::string label = p.status + (p.digest.empty() ? "" : " " + p.digest.substr(0, 19));
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\r%s %3d%% [%s] %s/%s", label.c_str(), percent, bar.c_str(),
                 human_bytes(p.completed).c_str(), human_bytes(p.total).c_str());
    std::fflush(stderr);
  } else if (percent == 100) {
    // Logs get one line per finished step, not a stream of redraws.
    std::fprintf(stderr, "%s 100%% %s\n", label.c_str(), human_bytes(p.total).c_str());
  }
}

std::string human_bytes(uint64_t b) {
  const char* unit = nullptr;
  double value = 0;
  if (b >= 1000ull * 1000 * 1000 * 1000) {
    value = static_cast<double>(b) / 1e12;
    unit = "TB";
  } else if (b >= 1000ull * 1000 * 1000) {
    value = static_cast<double>(b) / 1e9;
    unit = "GB";
  } else if (b >= 1000ull * 1000) {
    value = static_cast<double>(b) / 1e6;
    unit = "MB";
  } else if (b >= 1000) {
    value = static_cast<double>(b) / 1e3;
    unit = "KB";
  } else {
    return std::to_string(b) + " B";
  }
  char buf[32];
  if (value >= 10 || value == std::trunc(value)) {
    std::snprintf(buf, sizeof buf, "%d %s", static_cast<int>(value), unit);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", value, unit);
  }
  return buf;
}

std::string human_time(std::chrono::system_clock::time_point t) {
  if (t.time_since_epoch().count() == 0) return "Never";
  const auto delta = std::chrono::system_clock::now() - t;
  const bool future = delta.count() < 0;
  const double secs = std::fabs(std::chrono::duration<double>(delta).count());
  const long seconds = static_cast<long>(secs);
  std::string text;
  if (seconds < 1) {
    text = "Less than a second";
  } else if (seconds == 1) {
    text = "1 second";
  } else if (seconds < 60) {
    text = std::to_string(seconds) + " seconds";
  } else if (seconds / 60 == 1) {
    text = "About a minute";
  } else if (seconds / 60 < 60) {
    text = std::to_string(seconds / 60) + " minutes";
  } else {
    const long hours = std::lround(secs / 3600);
    if (hours == 1) {
      text = "About an hour";
    } else if (hours < 48) {
      text = std::to_string(hours) + " hours";
    } else if (hours < 24 * 7 * 2) {
      text = std::to_string(hours / 24) + " days";
    } else if (hours < 24 * 30 * 2) {
      text = std::to_string(hours / 24 / 7) + " weeks";
    } else if (hours < 24 * 365 * 2) {
      text = std::to_string(hours / 24 / 30) + " months";
    } else {
      text = std::to_string(static_cast<long>(secs / 3600) / 24 / 365) + " years";
    }
  }
  return text + (future ? " from now" : " ago");
}

}  // namespace hostlm::cli
