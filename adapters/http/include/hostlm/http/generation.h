// Running a text generation behind an HTTP response, the same way for every API family:
// deltas go out as they come, a client that goes away cancels the generation, and a server
// shutdown past its grace period ends the stream.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/http/server.h"
#include "hostlm/text_generation.h"

namespace hostlm::http {

enum class StreamEnd {
  kFinished,    // the generation ended on its own; summary() is set
  kClientGone,  // cancelled because the client disconnected
  kStopping,    // cancelled because the server is shutting down
};

// Reads `stream` to its end, passing each batch of deltas to `emit` (which returns false when
// a write failed). On kClientGone / kStopping the generation is cancelled and waited for, so
// summary() is set in every case.
StreamEnd pump_generation(TextStream& stream, StreamWriter& writer,
                          const std::function<bool(const std::vector<TextDelta>&)>& emit);

// For non-streamed answers: reads `stream` to its end and returns every delta. When
// `connected` turns false (the client went away) or the server must stop, the generation is
// cancelled and waited for; summary() then says "cancelled".
std::vector<TextDelta> collect_generation(TextStream& stream,
                                          const std::function<bool()>& connected,
                                          const std::function<bool()>& must_stop);

// Copies the summary's counts into the request's log line.
void log_generation(RequestLog& log, const GenerationSummary& summary);

// "call_" + 8 random [a-z0-9], Ollama's tool call ids; other prefixes and lengths for
// completion ids ("chatcmpl-", 24).
std::string random_id(std::string_view prefix, size_t length = 8);

}  // namespace hostlm::http
