#include "serving/served_model.h"

#include <algorithm>
#include <utility>

#include "hostlm/error.h"
#include "model/chat_prompt.h"
#include "serving/sampling.h"

namespace hostlm {
namespace {

bool is_system(const ChatMessage& m) { return m.role == "system" || m.role == "developer"; }

std::string too_long(size_t tokens, int64_t context) {
  return "the prompt is " + std::to_string(tokens) + " tokens, more than the context of " +
         std::to_string(context) + " tokens holds";
}

}  // namespace

ServedModel::ServedModel(PluginRegistry& registry, std::mutex& registry_mutex, ModelSpec spec,
                         const ServingOptions& options, int64_t context)
    : spec_(std::move(spec)), options_(options) {
  {
    std::lock_guard lock(registry_mutex);
    ModelLoadOptions load = options_.load;
    load.context = context > 0 ? context : options_.context;
    loaded_ = std::make_unique<LoadedModel>(registry, spec_.path, load);
    std::unique_ptr<ChatFormat> native =
        registry.plugin_for(loaded_->files().architecture).chat_format(loaded_->files());
    format_ = spec_.wrap_format ? spec_.wrap_format(std::move(native)) : std::move(native);
  }
  tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::load(spec_.path));
  end_ids_ = end_of_generation_ids(*tokenizer_);
  context_ = context > 0 ? context : options_.context;
  if (const int64_t trained = info().n_ctx_train; trained > 0)
    context_ = std::min(context_, trained);
  backend_name_ = loaded_->backend().name();
  EngineOptions engine;
  engine.max_sequences = std::max(1, options_.parallel);
  engine.context = context_;
  engine.max_queue = options_.max_queue;
  engine.kv_type = options_.kv_type;
  engine.log_memory = options_.log_memory;
  engine_ = std::make_unique<Engine>(loaded_->model(), engine);
}

ServedModel::~ServedModel() = default;

std::shared_ptr<const GrammarVocab> ServedModel::grammar_vocab() {
  std::lock_guard lock(vocab_mutex_);
  if (!vocab_) vocab_ = std::make_shared<const GrammarVocab>(*tokenizer_);
  return vocab_;
}

GrammarConstraint ServedModel::constraint_for(const TextRequest& request, const Conversation* chat,
                                              Thinking thinking) {
  const bool forced_tools = request.tool_choice.kind == ToolChoice::Kind::kRequired ||
                            request.tool_choice.kind == ToolChoice::Kind::kFunction;
  if (request.format.kind == ResponseFormat::Kind::kText && !forced_tools) return {};
  if (request.format.kind != ResponseFormat::Kind::kText && forced_tools)
    throw InvalidRequest("a response format and a required tool call cannot be combined");
  std::shared_ptr<const Grammar> grammar;
  if (request.format.kind == ResponseFormat::Kind::kJson) {
    grammar = std::make_shared<const Grammar>(Grammar::json_object());
  } else if (request.format.kind == ResponseFormat::Kind::kJsonSchema) {
    try {
      grammar = std::make_shared<const Grammar>(
          Grammar::from_json_schema(std::string_view(request.format.schema)));
    } catch (const std::exception& e) {
      throw InvalidRequest(std::string("invalid JSON schema in format: ") + e.what());
    }
  } else if (request.format.kind == ResponseFormat::Kind::kGrammar) {
    try {
      grammar = std::make_shared<const Grammar>(Grammar::from_gbnf(request.format.schema));
    } catch (const std::exception& e) {
      throw InvalidRequest(std::string("invalid grammar: ") + e.what());
    }
  } else {
    if (!chat || chat->tools.empty())
      throw InvalidRequest("tool_choice requires a call but the request offers no tools");
    if (request.tool_choice.kind == ToolChoice::Kind::kFunction &&
        std::none_of(chat->tools.begin(), chat->tools.end(), [&](const ToolDefinition& t) {
          const auto& fn = t.contains("function") ? t["function"] : t;
          return fn.is_object() && fn.value("name", std::string()) == request.tool_choice.function;
        }))
      throw InvalidRequest("tool_choice names the function '" + request.tool_choice.function +
                           "', which is not among the tools");
    const std::string gbnf = format_->tool_call_grammar(chat->tools, request.tool_choice.function,
                                                        request.parallel_tool_calls);
    if (gbnf.empty())
      throw InvalidRequest("model '" + spec_.name + "' cannot be made to call a tool");
    try {
      grammar = std::make_shared<const Grammar>(Grammar::from_gbnf(gbnf));
    } catch (const std::exception& e) {
      throw InvalidRequest(std::string("the tools cannot be turned into a grammar: ") + e.what());
    }
  }
  GrammarConstraint constraint;
  constraint.grammar = std::move(grammar);
  constraint.vocab = grammar_vocab();
  // Thinking stays free; the grammar holds the answer after it.
  if (thinking == Thinking::kOn)
    if (const auto end_think = tokenizer_->token_id("</think>"))
      constraint.start_after = *end_think;
  return constraint;
}

PreparedPrompt ServedModel::prepare(const TextRequest& request) {
  PreparedPrompt out;
  if (request.top_logprobs > 20) throw InvalidRequest("top_logprobs must be at most 20");
  out.options = request.options;
  out.options.inherit(spec_.defaults);
  out.options.inherit(options_.defaults);
  const size_t prefix = request.context_tokens.size();
  const bool forced_tools = request.tool_choice.kind == ToolChoice::Kind::kRequired ||
                            request.tool_choice.kind == ToolChoice::Kind::kFunction;
  const bool constrained = request.format.kind != ResponseFormat::Kind::kText || forced_tools;

  if (request.chat) {
    if (!format_)
      throw InvalidRequest("model '" + spec_.name + "' has no chat format: send a raw prompt");
    Conversation& c = out.conversation;
    c = *request.chat;
    if (request.tool_choice.kind == ToolChoice::Kind::kNone) c.tools.clear();
    c.messages.insert(c.messages.begin(), spec_.messages.begin(), spec_.messages.end());
    if (spec_.system && std::none_of(c.messages.begin(), c.messages.end(), is_system)) {
      ChatMessage system;
      system.role = "system";
      system.content = *spec_.system;
      c.messages.insert(c.messages.begin(), std::move(system));
    }
    for (ChatMessage& m : c.messages)
      if (m.role == "developer") m.role = "system";
    if (c.messages.empty()) throw InvalidRequest("the request has no messages");
    // Thinking: the request, else the model's default; a constrained answer does not think
    // unless asked to, since reasoning would spend the tokens the answer needs.
    Thinking thinking = request.think;
    if (thinking == Thinking::kDefault && spec_.think)
      thinking = *spec_.think ? Thinking::kOn : Thinking::kOff;
    if (thinking == Thinking::kDefault && constrained) thinking = Thinking::kOff;
    out.render.thinking = thinking;
    out.chat = true;
    try {
      for (;;) {
        out.tokens = tokenize_chat_prompt(*tokenizer_, *format_, c, out.render);
        if (static_cast<int64_t>(out.tokens.size() + prefix) < context_ || !request.truncate) break;
        // Drop the oldest message that is neither a system message nor the last one.
        auto victim = std::find_if(c.messages.begin(), c.messages.end() - 1,
                                   [](const ChatMessage& m) { return !is_system(m); });
        if (victim == c.messages.end() - 1) break;
        c.messages.erase(victim);
      }
      out.text = format_->render(c, out.render);
    } catch (const InvalidRequest&) {
      throw;
    } catch (const Error& e) {
      throw InvalidRequest(e.what());
    }
    const bool thinks = thinking == Thinking::kOn ||
                        (thinking == Thinking::kDefault && format_->thinks_by_default());
    out.constraint = constraint_for(request, &c, thinks ? Thinking::kOn : Thinking::kOff);
  } else {
    if (forced_tools) throw InvalidRequest("tool calls need messages, not a raw prompt");
    out.text = request.prompt;
    out.tokens = tokenizer_->encode(request.prompt);
    // Too long a raw prompt keeps its end, which is what the answer continues.
    const int64_t room = context_ - 1 - static_cast<int64_t>(prefix);
    if (request.truncate && room > 0 && static_cast<int64_t>(out.tokens.size()) > room)
      out.tokens.erase(out.tokens.begin(), out.tokens.end() - room);
    out.constraint = constraint_for(request, nullptr, Thinking::kOff);
  }
  out.tokens.insert(out.tokens.begin(), request.context_tokens.begin(),
                    request.context_tokens.end());
  if (out.tokens.empty()) throw InvalidRequest("the prompt is empty");
  if (static_cast<int64_t>(out.tokens.size()) >= context_)
    throw InvalidRequest(too_long(out.tokens.size(), context_));
  const int64_t vocab = info().n_vocab;
  for (const auto& [id, bias] : out.options.logit_bias)
    if (id < 0 || id >= vocab)
      throw InvalidRequest("logit_bias names token " + std::to_string(id) +
                           ", which is not in the vocabulary");
  for (const int32_t t : request.context_tokens)
    if (t < 0 || t >= vocab)
      throw InvalidRequest("context token " + std::to_string(t) + " is not in the vocabulary");
  return out;
}

}  // namespace hostlm
