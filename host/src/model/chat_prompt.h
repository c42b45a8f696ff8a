// Turning a conversation into prompt ids, shared by the CLI and the C API (internal header:
// not installed, because it is glue between public pieces rather than an interface).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/tokenizer.h"

namespace hostlm {

// The ids of a rendered prompt. Special-token text (<|im_start|>, …) that the format wrote
// becomes its token; the same text inside a message is tokenized as plain text, so user
// text cannot smuggle in control tokens. Messages without such text get exactly
// tokenizer.encode(format.render(…)).
std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, const ChatFormat& format,
                                          const Conversation& conversation,
                                          const ChatRenderOptions& options);

// Where the next turn's prompt will part from `prompt` (the conversation rendered with the
// generation prompt, as tokenize_chat_prompt gives it): the number of leading ids it shares
// with the conversation re-rendered after an assistant answer and then a user message, or a
// tool result. Templates that rewrite history part before the end of the prompt (Qwen3.5
// renders a past answer without the reasoning its generation prompt opens). Pass these as
// GenerationRequest::snapshot_at so the engine keeps the recurrent state there and the next
// turn computes only what is new. Sorted, distinct, each below prompt.size().
std::vector<int64_t> chat_reuse_points(const Tokenizer& tokenizer, const ChatFormat& format,
                                       const Conversation& conversation,
                                       const ChatRenderOptions& options,
                                       std::span<const int32_t> prompt);

// The earliest of chat_reuse_points, or 0 when there is none.
int64_t chat_reuse_point(const Tokenizer& tokenizer, const ChatFormat& format,
                         const Conversation& conversation, const ChatRenderOptions& options,
                         std::span<const int32_t> prompt);

// The ids that end a generation: the tokenizer's eos plus the turn and document ends of the
// ChatML family, which models often do not name as eos.
std::vector<int32_t> end_of_generation_ids(const Tokenizer& tokenizer);

}  // namespace hostlm
