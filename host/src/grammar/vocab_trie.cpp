#include "grammar/vocab_trie.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "hostlm/error.h"

namespace hostlm::grammar {

void VocabTrie::build() {
  std::vector<int32_t> order;
  in_trie.assign(bytes.size(), false);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i].empty()) continue;
    if (bytes[i].size() > std::numeric_limits<uint16_t>::max()) {
      throw Error("grammar: token " + std::to_string(i) + " is too long for the token trie");
    }
    order.push_back(static_cast<int32_t>(i));
    in_trie[i] = true;
  }
  // Sorted, a prefix comes just before its extensions, so the trie grows in preorder.
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes[a] != bytes[b] ? bytes[a] < bytes[b] : a < b;
  });
  nodes.assign(1, TrieNode{});
  token_ids.clear();
  std::vector<uint32_t> path{0};  // path[d]: the node at depth d of the current string
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = bytes[id];
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    while (path.size() > common + 1) {
      nodes[path.back()].next = static_cast<uint32_t>(nodes.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      TrieNode n;
      n.byte = static_cast<uint8_t>(s[d]);
      n.depth = static_cast<uint16_t>(d + 1);
      path.push_back(static_cast<uint32_t>(nodes.size()));
      nodes.push_back(n);
    }
    max_depth = std::max<uint16_t>(max_depth, static_cast<uint16_t>(s.size()));
    TrieNode& end = nodes[path.back()];
    if (end.tok_count == 0) end.tok_begin = static_cast<uint32_t>(token_ids.size());
    ++end.tok_count;
    token_ids.push_back(id);
    prev = s;
  }
  while (!path.empty()) {
    nodes[path.back()].next = static_cast<uint32_t>(nodes.size());
    path.pop_back();
  }
}

}  // namespace hostlm::grammar
