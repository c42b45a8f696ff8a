// Turning a conversation into prompt ids, shared by the CLI and the C API (internal header:
// not installed, because it is glue between public pieces rather than an interface).
#pragma once
#include <cstdint>
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

// The ids that end a generation: the tokenizer's eos plus the turn and document ends of the
// ChatML family, which models often do not name as eos.
std::vector<int32_t> end_of_generation_ids(const Tokenizer& tokenizer);

}  // namespace hostlm
