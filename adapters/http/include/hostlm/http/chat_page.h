// The browser chat page served at GET / to browsers (issue 8): one self-contained HTML
// document compiled into the binary from adapters/openai/chat_page/chat.html (library
// hostlm_chat_page). Other clients asking for / get Ollama's "Ollama is running".
#pragma once
#include <string_view>

namespace hostlm::http {

std::string_view chat_page_html();

}  // namespace hostlm::http
