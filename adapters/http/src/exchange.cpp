// One request as handlers see it: body reading within limits, replies, streamed replies.
#include <httplib.h>

#include "connection_probe.h"
#include "hostlm/http/server.h"
#include "hostlm/json_input.h"
#include "request_context.h"

namespace hostlm::http {

bool StreamWriter::write(std::string_view data) {
  if (failed_) return false;
  if (data.empty()) return true;
  if (!sink_.write(data.data(), data.size())) failed_ = true;
  return !failed_;
}

bool StreamWriter::client_connected() {
  if (failed_) return false;
  if (!sink_.is_writable()) failed_ = true;
  return !failed_;
}

Exchange::Exchange(const httplib::Request& request, httplib::Response& response,
                   const httplib::ContentReader* reader, std::vector<std::string> path_params,
                   size_t max_body_bytes, const std::atomic<bool>& stop_streams,
                   std::atomic<size_t>& active_streams)
    : request_(request),
      response_(response),
      reader_(reader),
      params_(std::move(path_params)),
      max_body_bytes_(max_body_bytes),
      stop_streams_(stop_streams),
      active_streams_(active_streams) {}

const std::string& Exchange::method() const { return request_.method; }
const std::string& Exchange::path() const { return request_.path; }

std::string Exchange::header(const std::string& name) const {
  return request_.get_header_value(name.c_str());
}

std::string Exchange::query(const std::string& name) const {
  return request_.get_param_value(name.c_str());
}

const std::string& Exchange::body() {
  if (body_read_) return body_;
  body_read_ = true;
  if (!reader_) {
    body_ = request_.body;
    return body_;
  }
  const std::string too_large =
      "request body too large: the limit is " + std::to_string(max_body_bytes_) + " bytes";
  const std::string declared = header("Content-Length");
  if (!declared.empty()) {
    uint64_t length = 0;
    try {
      length = std::stoull(declared);
    } catch (const std::logic_error&) {
      throw HttpError(400, "invalid Content-Length header");
    }
    if (length > max_body_bytes_) {
      // Unread: the server drops it after the answer, or closes when it is huge.
      body_read_ = false;
      response_.set_header("Connection", "close");
      throw HttpError(413, too_large);
    }
  }
  // Past the limit the rest is read and dropped (up to a bound), so the connection stays in
  // step for the answer.
  const size_t drain_limit = max_body_bytes_ + (64u << 20);
  size_t seen = 0;
  const bool ok = (*reader_)([&](const char* data, size_t n) {
    seen += n;
    if (seen > drain_limit) return false;
    if (seen <= max_body_bytes_) body_.append(data, n);
    return true;
  });
  if (seen > max_body_bytes_) {
    body_.clear();
    response_.set_header("Connection", "close");
    throw HttpError(413, too_large);
  }
  if (!ok) throw HttpError(400, "the request body could not be read");
  return body_;
}

nlohmann::ordered_json Exchange::json() {
  const std::string& text = body();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw HttpError(400, "missing request body");
  try {
    return parse_input_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw HttpError(400, std::string("invalid JSON in the request body: ") + e.what());
  } catch (const JsonTooDeep& e) {
    throw HttpError(400, std::string("invalid JSON in the request body: ") + e.what());
  }
}

bool Exchange::read_body(const std::function<bool(const char*, size_t)>& sink) {
  body_read_ = true;
  if (!reader_) return request_.body.empty() || sink(request_.body.data(), request_.body.size());
  return (*reader_)([&](const char* data, size_t n) { return sink(data, n); });
}

void Exchange::send_json(int status, const nlohmann::ordered_json& body) {
  response_.status = status;
  response_.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                        "application/json; charset=utf-8");
}

void Exchange::send_text(int status, std::string text, const std::string& content_type) {
  response_.status = status;
  response_.set_content(std::move(text), content_type.c_str());
}

void Exchange::send_empty(int status) { response_.status = status; }

void Exchange::send_stream(const std::string& content_type,
                           std::function<void(StreamWriter&)> produce) {
  response_.status = 200;
  // Proxies (nginx) would otherwise buffer the stream.
  response_.set_header("Cache-Control", "no-cache");
  response_.set_header("X-Accel-Buffering", "no");
  auto producer = std::make_shared<std::function<void(StreamWriter&)>>(std::move(produce));
  const std::atomic<bool>* stop = &stop_streams_;
  std::atomic<size_t>* active = &active_streams_;
  response_.set_chunked_content_provider(content_type.c_str(),
                                         [producer, stop, active](size_t, httplib::DataSink& sink) {
                                           ++*active;
                                           StreamWriter writer(sink, *stop);
                                           try {
                                             (*producer)(writer);
                                           } catch (const std::exception& e) {
                                             // Nothing may escape into the server's worker thread;
                                             // the stream just ends.
                                             current_request().fields.error = e.what();
                                           } catch (...) {
                                             current_request().fields.error = "unknown error";
                                           }
                                           --*active;
                                           sink.done();
                                           return true;
                                         });
}

RequestLog& Exchange::log() { return current_request().fields; }

bool Exchange::client_connected() {
  if (!probe_)
    probe_ = std::make_shared<const ConnectionProbe>(request_.remote_addr, request_.remote_port,
                                                     request_.local_addr, request_.local_port);
  return probe_->client_connected();
}

}  // namespace hostlm::http
