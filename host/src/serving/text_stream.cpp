// One generation on the engine, turned into text deltas on the reader's thread.
//
// The engine's callbacks run on its scheduler thread and only queue token ids; decoding,
// stop strings and the chat parser run in read(), on the thread that writes the response,
// so a slow client never holds up the other requests of the batch.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "hostlm/stop_strings.h"
#include "hostlm/tokenizer.h"
#include "model/chat_prompt.h"
#include "serving/lease_state.h"
#include "serving/logprobs.h"
#include "serving/sampling.h"

namespace hostlm::serving {
namespace {

using Clock = std::chrono::steady_clock;

// Filled by the engine's scheduler thread, drained by read().
struct TokenChannel {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;  // one per token when asked for
  bool done = false;
  bool stop = false;  // the reader asked the engine to stop
  GenerationResult result;
};

std::chrono::nanoseconds from_ms(double ms) {
  return std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6));
}

class EngineTextStream final : public TextStream {
 public:
  EngineTextStream(std::shared_ptr<LeaseState> lease, PreparedPrompt prompt, int top_logprobs)
      : lease_(std::move(lease)),
        model_(*lease_->model),
        started_(Clock::now()),
        decoder_(model_.tokenizer()),
        stops_(prompt.options.stop.value_or(std::vector<std::string>{})),
        channel_(std::make_shared<TokenChannel>()) {
    if (prompt.chat)
      parser_ = model_.format()->new_parser(prompt.conversation.tools, prompt.render);
    summary_.prompt_tokens = static_cast<int64_t>(prompt.tokens.size());
    summary_.load_duration = lease_->load_duration;
    summary_.context = prompt.tokens;

    GenerationRequest request;
    request.sampling = sampler_params(prompt.options, model_.context());
    const int64_t room = model_.context() - static_cast<int64_t>(prompt.tokens.size());
    const int64_t num_predict = prompt.options.num_predict.value_or(-1);
    request.max_tokens = num_predict < 0 ? room : std::min(num_predict, room);
    request.stop_tokens = model_.end_ids();
    request.constraint = std::move(prompt.constraint);
    // Where the next turn of this chat will part from this prompt: the engine keeps the
    // recurrent state there, so the follow-up computes only what is new.
    if (prompt.chat)
      request.snapshot_at = chat_reuse_points(model_.tokenizer(), *model_.format(),
                                              prompt.conversation, prompt.render, prompt.tokens);
    request.prompt = std::move(prompt.tokens);
    if (top_logprobs >= 0) {
      recorder_ = std::make_shared<LogprobRecorder>(top_logprobs);
      request.on_logits = [recorder = recorder_](std::span<const float> logits) {
        recorder->on_logits(logits);
      };
    }
    if (request.max_tokens <= 0) {  // num_predict 0: nothing to do
      std::lock_guard lock(channel_->mutex);
      channel_->done = true;
      channel_->result.done_reason = "length";
      return;
    }
    try {
      submit(std::move(request));
    } catch (const EngineBusy&) {
      throw;
    } catch (const Error& e) {
      throw InvalidRequest(e.what());  // the request can never fit this engine
    }
    submitted_ = true;
  }

  void submit(GenerationRequest request) {
    auto channel = channel_;
    id_ = model_.engine().submit(
        std::move(request),
        [channel, recorder = recorder_](int32_t token) {
          std::lock_guard lock(channel->mutex);
          channel->tokens.push_back(token);
          if (recorder) channel->logprobs.push_back(recorder->take(token));
          channel->changed.notify_one();
          return !channel->stop;
        },
        [channel](const GenerationResult& result) {
          std::lock_guard lock(channel->mutex);
          channel->result = result;
          channel->done = true;
          channel->changed.notify_one();
        });
  }

  ~EngineTextStream() override {
    if (!finished_) cancel();
  }

  bool read(std::vector<TextDelta>& out, std::chrono::milliseconds timeout) override {
    if (finished_) return true;
    // The read buffers go back to the channel with their capacity (swap): the engine's
    // pushes, on its scheduler thread, stop allocating once both have grown (a fresh vector
    // each read made every token's push allocate).
    std::vector<int32_t>& batch = read_tokens_;
    std::vector<TokenLogprob>& logprobs = read_logprobs_;
    batch.clear();
    logprobs.clear();
    bool done = false;
    {
      std::unique_lock lock(channel_->mutex);
      channel_->changed.wait_for(lock, timeout,
                                 [&] { return channel_->done || !channel_->tokens.empty(); });
      batch.swap(channel_->tokens);
      logprobs.swap(channel_->logprobs);
      done = channel_->done;  // set after the last token: this batch holds them all
    }
    const size_t first_new = out.size();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (i < logprobs.size() && !is_end(batch[i]) && !stops_.stopped())
        pending_logprobs_.push_back(with_texts(std::move(logprobs[i])));
      take(batch[i], out);
    }
    if (done) finish(out);
    attach_logprobs(out, first_new);
    return finished_;
  }

  void cancel() override {
    {
      std::lock_guard lock(channel_->mutex);
      channel_->stop = true;
    }
    if (submitted_) model_.engine().cancel(id_);
  }

  const GenerationSummary& summary() const override { return summary_; }

 private:
  TokenLogprob with_texts(TokenLogprob t) const {
    t.token = model_.tokenizer().token_bytes(t.id);
    for (TokenLogprob& alt : t.top) alt.token = model_.tokenizer().token_bytes(alt.id);
    return t;
  }

  // Log probabilities go with the first delta their tokens helped make; at the end, with the
  // last (an empty content delta when there is none), so none is lost to held-back text.
  void attach_logprobs(std::vector<TextDelta>& out, size_t first_new) {
    if (pending_logprobs_.empty()) return;
    if (out.size() == first_new) {
      if (!finished_) return;
      out.emplace_back();
    }
    auto& target = out[first_new].logprobs;
    target.insert(target.end(), std::make_move_iterator(pending_logprobs_.begin()),
                  std::make_move_iterator(pending_logprobs_.end()));
    pending_logprobs_.clear();
  }

  bool is_end(int32_t token) const {
    const auto& ends = model_.end_ids();
    return std::find(ends.begin(), ends.end(), token) != ends.end();
  }

  void take(int32_t token, std::vector<TextDelta>& out) {
    if (stops_.stopped() || is_end(token)) return;
    ++generated_;
    summary_.context.push_back(token);
    show(decoder_.push(token), out);
  }

  // Raw generated text -> stop strings -> chat parser -> deltas.
  void show(const std::string& text, std::vector<TextDelta>& out) {
    if (text.empty()) return;
    StopStringMatcher::Pushed pushed = stops_.push(text);
    parse(pushed.text, out);
    if (pushed.stopped) {
      summary_.stop_string = pushed.matched;
      cancel();
    }
  }

  void parse(const std::string& text, std::vector<TextDelta>& out) {
    if (text.empty()) return;
    if (!parser_) {
      add(out, TextDelta::Kind::kContent, text);
      return;
    }
    deliver(parser_->feed(text), out);
  }

  void deliver(const std::vector<ChatEvent>& events, std::vector<TextDelta>& out) {
    for (const ChatEvent& e : events) {
      switch (e.kind) {
        case ChatEvent::Kind::kReasoning:
          add(out, TextDelta::Kind::kThinking, e.text);
          break;
        case ChatEvent::Kind::kContent:
          add(out, TextDelta::Kind::kContent, e.text);
          break;
        case ChatEvent::Kind::kToolCall: {
          TextDelta d;
          d.kind = TextDelta::Kind::kToolCall;
          d.tool_call = e.tool_call;
          out.push_back(std::move(d));
          ++summary_.tool_calls;
          break;
        }
      }
    }
  }

  // Text of one kind that follows text of the same kind joins it: fewer, larger deltas.
  static void add(std::vector<TextDelta>& out, TextDelta::Kind kind, const std::string& text) {
    if (text.empty()) return;
    if (!out.empty() && out.back().kind == kind && kind != TextDelta::Kind::kToolCall) {
      out.back().text += text;
      return;
    }
    TextDelta d;
    d.kind = kind;
    d.text = text;
    out.push_back(std::move(d));
  }

  void finish(std::vector<TextDelta>& out) {
    if (!stops_.stopped()) {
      show(decoder_.finish(), out);
      parse(stops_.finish(), out);
    }
    if (parser_) deliver(parser_->finish(), out);
    const GenerationResult& r = channel_->result;  // no writer any more: done was seen
    summary_.generated_tokens = generated_;
    // A stop string ends the request by cancelling it: that is a normal stop.
    summary_.done_reason = summary_.stop_string.empty() ? r.done_reason : "stop";
    summary_.error = r.error;
    if (r.prompt_tokens > 0) summary_.prompt_tokens = r.prompt_tokens;  // after truncation
    summary_.cached_tokens = r.cached_tokens;
    summary_.prompt_duration = from_ms(r.prompt_ms);
    summary_.generation_duration = from_ms(r.generate_ms);
    summary_.total_duration = (Clock::now() - started_) + summary_.load_duration;
    finished_ = true;
  }

  std::shared_ptr<LeaseState> lease_;  // keeps the model loaded while this stream lives
  ServedModel& model_;
  Clock::time_point started_;
  StreamingDecoder decoder_;
  StopStringMatcher stops_;
  std::unique_ptr<ChatParser> parser_;
  std::shared_ptr<TokenChannel> channel_;
  std::shared_ptr<LogprobRecorder> recorder_;  // set when log probabilities are asked for
  std::vector<TokenLogprob> pending_logprobs_;
  std::vector<int32_t> read_tokens_;  // read()'s buffers, swapped with the channel's
  std::vector<TokenLogprob> read_logprobs_;
  Engine::RequestId id_ = 0;
  bool submitted_ = false;
  bool finished_ = false;
  int64_t generated_ = 0;
  GenerationSummary summary_;
};

}  // namespace

std::unique_ptr<TextStream> start_text_stream(std::shared_ptr<LeaseState> lease,
                                              TextRequest request) {
  PreparedPrompt prompt = lease->model->prepare(request);
  return std::make_unique<EngineTextStream>(std::move(lease), std::move(prompt),
                                            request.top_logprobs);
}

}  // namespace hostlm::serving
