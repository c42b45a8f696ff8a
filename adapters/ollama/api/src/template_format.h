// A Modelfile TEMPLATE as a chat format: the Go template renders the prompt; the plugin's
// parser (when the model has a PARSER, or the plugin's format otherwise applies) reads the
// answer, else the answer is all content.
#pragma once
#include <memory>

#include "hostlm/chat.h"
#include "hostlm/ollama/go_template.h"

namespace hostlm::ollama {

std::unique_ptr<ChatFormat> template_chat_format(GoTemplate tmpl,
                                                 std::unique_ptr<ChatFormat> native,
                                                 bool use_native_parser);

}  // namespace hostlm::ollama
