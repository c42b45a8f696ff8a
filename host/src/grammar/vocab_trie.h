// Every allowed token's bytes in one trie, laid out in preorder so that a walk is a linear
// scan that can jump over a whole subtree (the tokens sharing a rejected prefix) at once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hostlm::grammar {

struct TrieNode {
  uint32_t next = 0;       // index of the first node after this node's subtree
  uint32_t tok_begin = 0;  // tokens whose bytes end here: token_ids[tok_begin, +tok_count)
  uint16_t tok_count = 0;

  uint16_t depth = 0;  // bytes from the root; the root is node 0 at depth 0
  uint8_t byte = 0;
};

struct VocabTrie {
  std::vector<std::string> bytes;  // per id; "" for ids the trie leaves out
  std::vector<bool> in_trie;
  std::vector<int32_t> end_tokens;
  std::vector<TrieNode> nodes;
  std::vector<int32_t> token_ids;
  uint16_t max_depth = 0;

  // `bytes[i]` empty: token i is never offered by the trie.
  void build();
};

}  // namespace hostlm::grammar
