#include "hostlm/http/generation.h"

#include <random>

namespace hostlm::http {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);

// After a cancel the engine stops at its next step; wait for the summary, within reason.
void drain(TextStream& stream) {
  std::vector<TextDelta> ignored;
  for (int i = 0; i < 300 && !stream.read(ignored, kPoll); ++i) ignored.clear();
}

}  // namespace

StreamEnd pump_generation(TextStream& stream, StreamWriter& writer,
                          const std::function<bool(const std::vector<TextDelta>&)>& emit) {
  std::vector<TextDelta> deltas;
  for (;;) {
    deltas.clear();
    const bool done = stream.read(deltas, kPoll);
    if (!deltas.empty() && !emit(deltas)) {
      stream.cancel();
      drain(stream);
      return StreamEnd::kClientGone;
    }
    if (done) return StreamEnd::kFinished;
    if (writer.must_stop()) {
      stream.cancel();
      drain(stream);
      return StreamEnd::kStopping;
    }
    // Quiet while the prompt is evaluated: look at the connection instead of writing.
    if (deltas.empty() && !writer.client_connected()) {
      stream.cancel();
      drain(stream);
      return StreamEnd::kClientGone;
    }
  }
}

std::vector<TextDelta> collect_generation(TextStream& stream,
                                          const std::function<bool()>& connected,
                                          const std::function<bool()>& must_stop) {
  std::vector<TextDelta> all;
  while (!stream.read(all, kPoll)) {
    if (!connected() || must_stop()) {
      stream.cancel();
      drain(stream);
      break;
    }
  }
  return all;
}

void log_generation(RequestLog& log, const GenerationSummary& summary) {
  log.prompt_tokens = summary.prompt_tokens;
  log.tokens = summary.generated_tokens;
  log.done_reason = summary.done_reason;
  if (!summary.error.empty()) log.error = summary.error;
}

std::string random_id(std::string_view prefix, size_t length) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof kChars - 2);
  std::string id(prefix);
  for (size_t i = 0; i < length; ++i) id += kChars[pick(rng)];
  return id;
}

}  // namespace hostlm::http
