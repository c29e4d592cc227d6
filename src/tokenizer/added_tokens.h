// Finds added tokens (control and user-defined tokens) in raw text. Hugging Face matches them
// leftmost-longest before any normalization; scanning positions left to right and taking the longest
// token that starts at the first position where one does gives exactly that.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fgemma::tokenizer_internal {

struct AddedMatch {
  int32_t id = -1;  // -1: no token starts here
  size_t length = 0;
};

class AddedTokenMatcher {
 public:
  // `plain` marks tokens that are still matched when special parsing is off (whitespace runs).
  void Add(std::string_view text, int32_t id, bool plain);
  // Freezes the trie into flat arrays; Add may not be called afterwards.
  void Finish();

  bool empty() const { return nodes_.size() <= 1; }
  // Cheap pre-check: can any (allowed) token start with this byte?
  bool MayStartWith(uint8_t b, bool plain_only) const { return (first_byte_[b] & (plain_only ? 2 : 1)) != 0; }
  // Longest token starting at text[pos]; with plain_only, only tokens added with plain = true.
  AddedMatch Match(std::string_view text, size_t pos, bool plain_only) const;

 private:
  struct Node {
    uint32_t first_edge = 0;
    uint32_t num_edges = 0;
    int32_t id = -1;
    bool plain = false;
  };
  struct Edge {
    uint8_t byte;
    uint32_t child;
  };
  // During Add, edges of a node are kept per node; Finish() sorts them into one array.
  std::vector<Node> nodes_{Node{}};
  std::vector<std::vector<Edge>> building_{{}};
  std::vector<Edge> edges_;
  std::array<uint8_t, 256> first_byte_{};  // bit 0: any token, bit 1: a plain token
};

}  // namespace fgemma::tokenizer_internal
