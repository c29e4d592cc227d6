#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace fgemma::tokenizer_internal {

void AddedTokenMatcher::Add(std::string_view text, int32_t id, bool plain) {
  if (text.empty()) return;  // an empty token could never be matched by Hugging Face either
  uint32_t node = 0;
  for (char c : text) {
    const auto b = static_cast<uint8_t>(c);
    auto& edges = building_[node];
    auto it = std::find_if(edges.begin(), edges.end(), [b](const Edge& e) { return e.byte == b; });
    if (it != edges.end()) {
      node = it->child;
      continue;
    }
    const auto child = static_cast<uint32_t>(nodes_.size());
    edges.push_back({b, child});
    nodes_.emplace_back();
    building_.emplace_back();
    node = child;
  }
  nodes_[node].id = id;
  nodes_[node].plain = plain;
  const auto first = static_cast<uint8_t>(text[0]);
  first_byte_[first] |= plain ? 3 : 1;
}

void AddedTokenMatcher::Finish() {
  edges_.clear();
  for (size_t n = 0; n < nodes_.size(); ++n) {
    auto& edges = building_[n];
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.byte < b.byte; });
    nodes_[n].first_edge = static_cast<uint32_t>(edges_.size());
    nodes_[n].num_edges = static_cast<uint32_t>(edges.size());
    edges_.insert(edges_.end(), edges.begin(), edges.end());
  }
  building_.clear();
  building_.shrink_to_fit();
}

AddedMatch AddedTokenMatcher::Match(std::string_view text, size_t pos, bool plain_only) const {
  AddedMatch best;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const Node& n = nodes_[node];
    const Edge* begin = edges_.data() + n.first_edge;
    const Edge* end = begin + n.num_edges;
    const auto b = static_cast<uint8_t>(text[i]);
    const Edge* e = std::lower_bound(begin, end, b, [](const Edge& edge, uint8_t v) { return edge.byte < v; });
    if (e == end || e->byte != b) break;
    node = e->child;
    const Node& child = nodes_[node];
    if (child.id >= 0 && (!plain_only || child.plain)) best = {child.id, i - pos + 1};
  }
  return best;
}

}  // namespace fgemma::tokenizer_internal
