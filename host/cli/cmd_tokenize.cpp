// `hostlm tokenize` and `hostlm detokenize`: the tokenizer of a GGUF, a Hugging Face folder or
// a tokenizer.json, from the command line. Outside checks parse this output: keep it exact.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "hostlm/error.h"
#include "hostlm/tokenizer.h"
#include "store_util.h"

namespace hostlm::cli {
namespace {

struct TokenizeOptions {
  std::string model, text, file;
  bool no_special = false, lines = false;
};

struct DetokenizeOptions {
  std::string model, ids;
  bool skip_special = false;
};

std::string read_input(const std::string& file) {
  if (file == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(file + ": read failed");
  return std::move(text).str();
}

void print_ids(const std::vector<int32_t>& ids, std::string& out) {
  out.push_back('[');
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(std::to_string(ids[i]));
  }
  out.append("]\n");
}

void write_stdout(const std::string& out) {
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw Error("cannot write to standard output");
  }
}

void run_tokenize(const TokenizeOptions& o) {
  const Tokenizer tokenizer = Tokenizer::load(resolve_model(o.model));
  const std::string input = o.file.empty() ? o.text : read_input(o.file);
  const Tokenizer::EncodeOptions encode{.parse_special = !o.no_special};
  std::string out;
  if (!o.lines) {
    print_ids(tokenizer.encode(input, encode), out);
  } else {
    // One array per line, the line without its '\n'; a final '\n' opens no extra line.
    size_t start = 0;
    while (start < input.size()) {
      size_t end = input.find('\n', start);
      if (end == std::string::npos) end = input.size();
      print_ids(tokenizer.encode(std::string_view(input).substr(start, end - start), encode), out);
      start = end + 1;
    }
  }
  write_stdout(out);
}

std::vector<int32_t> parse_ids(const std::string& text) {
  // "1,2,3"; spaces and JSON brackets are tolerated so a tokenize output can be pasted back.
  std::vector<int32_t> ids;
  std::string item;
  auto flush = [&] {
    if (item.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0 || v > INT32_MAX)
      throw Error("--ids: '" + item + "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
    item.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '[' || c == ']') {
      flush();
    } else {
      item.push_back(c);
    }
  }
  flush();
  return ids;
}

void run_detokenize(const DetokenizeOptions& o) {
  const Tokenizer tokenizer = Tokenizer::load(resolve_model(o.model));
  const std::vector<int32_t> ids = parse_ids(o.ids);
  for (int32_t id : ids) {
    if (id >= tokenizer.vocab_size()) {
      throw Error("--ids: " + std::to_string(id) + " is not below the vocabulary size " +
                  std::to_string(tokenizer.vocab_size()));
    }
  }
  std::string text = tokenizer.decode(ids, o.skip_special);
  // The text exactly; a newline only for a person at a terminal.
  if (::isatty(STDOUT_FILENO)) text.push_back('\n');
  write_stdout(text);
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
  auto tok = std::make_shared<TokenizeOptions>();
  CLI::App* t = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  t->add_option("MODEL_OR_TOKENIZER", tok->model,
                "A .gguf file, a Hugging Face folder, or a tokenizer.json")
      ->required();
  CLI::Option_group* input = t->add_option_group("input", "What to tokenize");
  input->add_option("--text", tok->text, "The text");
  input->add_option("--file", tok->file, "A file holding the text ('-': standard input)");
  input->require_option(1);
  t->add_flag("--no-special", tok->no_special,
              "Treat special-token text (<|im_start|>, ...) as plain text, for untrusted input");
  t->add_flag("--lines", tok->lines, "One JSON array per input line (without its newline)");
  t->callback([tok] { run_tokenize(*tok); });

  auto detok = std::make_shared<DetokenizeOptions>();
  CLI::App* d = app.add_subcommand("detokenize", "Print the text of token ids");
  d->add_option("MODEL_OR_TOKENIZER", detok->model,
                "A .gguf file, a Hugging Face folder, or a tokenizer.json")
      ->required();
  d->add_option("--ids", detok->ids, "Comma-separated token ids, e.g. 1,2,3")->required();
  d->add_flag("--skip-special", detok->skip_special, "Leave special tokens out of the text");
  d->callback([detok] { run_detokenize(*detok); });
}

}  // namespace hostlm::cli
