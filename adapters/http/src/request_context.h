// The log record of the request this worker thread is serving. cpp-httplib serves a request,
// streamed body included, on one thread and calls the logger last on that same thread, so a
// thread-local record follows the request from routing to its log line.
#pragma once
#include <chrono>

#include "hostlm/http/logger.h"

namespace hostlm::http {

struct RequestContext {
  RequestLog fields;
  std::chrono::steady_clock::time_point start{};
  bool started = false;
};

RequestContext& current_request();

}  // namespace hostlm::http
