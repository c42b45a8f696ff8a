// The chat page compiled into the binary (hostlm_chat_page) is the page in the source tree,
// byte for byte, and stays self-contained: nothing in it loads from another host.
#include "hostlm/http/chat_page.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

std::string source_page() {
  const char* root = std::getenv("HOSTLM_SOURCE_DIR");
  if (!root) ADD_FAILURE() << "HOSTLM_SOURCE_DIR is not set (ctest sets it)";
  const std::string path = std::string(root ? root : ".") + "/adapters/openai/chat_page/chat.html";
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ChatPage, EmbeddedPageIsTheSourceFile) {
  const std::string page = source_page();
  ASSERT_FALSE(page.empty());
  EXPECT_EQ(std::string(hostlm::http::chat_page_html()), page);
}

TEST(ChatPage, IsOneHtmlDocumentWithInlineStyleAndScript) {
  const std::string page(hostlm::http::chat_page_html());
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  EXPECT_EQ(count(page, "<style>"), 1u);
  EXPECT_EQ(count(page, "<script>"), 1u);
  EXPECT_LT(page.size(), 64u * 1024) << "the page is meant to stay small";
}

TEST(ChatPage, LoadsNothingFromElsewhere) {
  const std::string page(hostlm::http::chat_page_html());
  // Absolute and protocol-relative URLs, and every way HTML/CSS could pull in a resource.
  const std::regex external(R"((https?:)?//[A-Za-z0-9][-A-Za-z0-9.]*\.[A-Za-z]{2,})",
                            std::regex::icase);
  std::smatch m;
  EXPECT_FALSE(std::regex_search(page, m, external)) << "external URL: " << m.str();
  for (const char* pull : {"src=", "@import", "url(", "<iframe", "<object", "<embed"})
    EXPECT_EQ(page.find(pull), std::string::npos) << pull;
  // The one <link> is an empty icon, so that browsers do not ask for /favicon.ico.
  EXPECT_EQ(count(page, "<link"), count(page, "<link rel=\"icon\" href=\"data:,\">"));
  // Its fetches are relative to the page (the server's own /v1 API).
  EXPECT_NE(page.find("fetch(\"v1/chat/completions\""), std::string::npos);
  EXPECT_NE(page.find("fetch(\"v1/models\""), std::string::npos);
}

}  // namespace
