// libFuzzer target for the server's request readers: one JSON body, parsed the way the server
// parses it (parse_input_json), read as each of Ollama's /api/chat, /api/generate and
// /api/create and OpenAI's /v1/chat/completions and /v1/completions bodies. A client's mistake must
// come back as a 4xx: the readers may throw http::HttpError with a 4xx status or InvalidRequest
// (the server answers 400), and anything else (a library's type error, std::out_of_range, a bad
// allocation) would reach the client as a 500 or worse, so it aborts here. ASan and UBSan
// watch the rest. The same bytes are also read as a store manifest (a registry sends those),
// which may only fail with a hostlm::Error naming its source.
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "hostlm/http/server.h"
#include "hostlm/json_input.h"
#include "hostlm/ollama/api_requests.h"
#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/store.h"
#include "hostlm/openai/requests.h"
#include "hostlm/text_generation.h"
#include "manifest.h"

namespace {

template <class F>
void expect_client_errors_only(F&& read) {
  try {
    read();
  } catch (const hostlm::http::HttpError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
  } catch (const hostlm::InvalidRequest&) {
  } catch (const hostlm::ollama::RequestError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    hostlm::ollama::Manifest::parse(text, "fuzz-manifest");
  } catch (const hostlm::Error& e) {
    if (!std::string_view(e.what()).starts_with("fuzz-manifest: ")) std::abort();
  }
  nlohmann::ordered_json body;
  try {
    body = hostlm::parse_input_json(text);
  } catch (const std::exception&) {
    return 0;  // the server's 400 for a body that is no JSON (json_input has its own tests)
  }
  expect_client_errors_only([&] { hostlm::ollama::parse_chat_request(body); });
  expect_client_errors_only([&] { hostlm::ollama::parse_generate_request(body); });
  expect_client_errors_only([&] { hostlm::openai::parse_chat_completion(body); });
  expect_client_errors_only([&] { hostlm::openai::parse_completion(body); });
  expect_client_errors_only([&] { hostlm::ollama::CreateRequest::from_json(body); });
  return 0;
}
