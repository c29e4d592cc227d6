#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace fgemma::tokenizer_internal {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁"

// Hugging Face's Replace(" ", "▁") and Prepend("▁") normalizers.
std::string_view Normalize(const TokenizerModel& m, std::string_view raw, std::string& buffer) {
  const bool prepend = m.prepend_space && !raw.empty();
  if (!prepend && raw.find(' ') == std::string_view::npos) return raw;
  buffer.clear();
  if (prepend) buffer.append(kSpaceMarker);
  for (char c : raw) {
    if (c == ' ') {
      buffer.append(kSpaceMarker);
    } else {
      buffer.push_back(c);
    }
  }
  return buffer;
}

void PushSymbol(BpeWorkspace& ws, int32_t id) {
  const auto index = static_cast<int32_t>(ws.symbols.size());
  ws.symbols.push_back({id, index - 1, index + 1});
}

// One symbol per character; characters outside the vocabulary (and bytes that are not part of a
// well-formed character) become one byte token per byte, which no merge ever joins.
void SplitCharacters(const TokenizerModel& m, std::string_view text, BpeWorkspace& ws) {
  ws.symbols.clear();
  for (size_t pos = 0; pos < text.size();) {
    const auto lead = static_cast<uint8_t>(text[pos]);
    if (lead < 0x80) {
      const int32_t id = m.ascii_ids[lead];
      PushSymbol(ws, id >= 0 ? id : m.byte_ids[lead]);
      ++pos;
      continue;
    }
    const size_t len = Utf8CharLength(text, pos);
    if (len == 0) {
      PushSymbol(ws, m.byte_ids[lead]);
      ++pos;
      continue;
    }
    const int32_t id = m.Find(text.substr(pos, len));
    if (id >= 0 && m.BpeUsable(id)) {
      PushSymbol(ws, id);
    } else {
      for (size_t i = 0; i < len; ++i) PushSymbol(ws, m.byte_ids[static_cast<uint8_t>(text[pos + i])]);
    }
    pos += len;
  }
  if (!ws.symbols.empty()) ws.symbols.back().next = -1;
}

bool Later(const BpeWorkspace::Candidate& a, const BpeWorkspace::Candidate& b) { return a.order > b.order; }

void PushCandidate(const TokenizerModel& m, BpeWorkspace& ws, int32_t left) {
  const auto& symbols = ws.symbols;
  const int32_t right = symbols[left].next;
  if (right < 0) return;
  const int32_t left_id = symbols[left].id;
  const int32_t right_id = symbols[right].id;
  const Merge* merge = m.merges.Find(left_id, right_id);
  if (merge == nullptr) return;
  ws.heap.push_back({(uint64_t{merge->rank} << 32) | static_cast<uint32_t>(left), left_id, right_id, merge->result});
  std::push_heap(ws.heap.begin(), ws.heap.end(), Later);
}

void MergeAll(const TokenizerModel& m, BpeWorkspace& ws) {
  auto& symbols = ws.symbols;
  ws.heap.clear();
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) {
    const Merge* merge = m.merges.Find(symbols[i].id, symbols[i + 1].id);
    if (merge != nullptr)
      ws.heap.push_back({(uint64_t{merge->rank} << 32) | static_cast<uint32_t>(i), symbols[i].id, symbols[i + 1].id, merge->result});
  }
  std::make_heap(ws.heap.begin(), ws.heap.end(), Later);
  while (!ws.heap.empty()) {
    std::pop_heap(ws.heap.begin(), ws.heap.end(), Later);
    const BpeWorkspace::Candidate c = ws.heap.back();
    ws.heap.pop_back();
    const auto left = static_cast<int32_t>(c.order & 0xFFFFFFFFu);
    // A candidate is stale when either symbol has since been merged with something else; a symbol's
    // id only ever changes to a longer token, so matching ids mean the pair is still there.
    if (symbols[left].id != c.left_id) continue;
    const int32_t right = symbols[left].next;
    if (right < 0 || symbols[right].id != c.right_id) continue;
    symbols[left].id = c.result;
    symbols[right].id = -1;
    const int32_t after = symbols[right].next;
    symbols[left].next = after;
    if (after >= 0) symbols[after].prev = left;
    if (symbols[left].prev >= 0) PushCandidate(m, ws, symbols[left].prev);
    PushCandidate(m, ws, left);
  }
}

}  // namespace

void EncodeStretch(const TokenizerModel& m, std::string_view raw, BpeWorkspace& ws, std::vector<int32_t>& out) {
  const std::string_view text = Normalize(m, raw, ws.normalized);
  if (text.empty()) return;
  if (m.ignore_merges) {
    const int32_t id = m.Find(text);
    if (id >= 0 && m.BpeUsable(id)) {
      out.push_back(id);
      return;
    }
  }
  SplitCharacters(m, text, ws);
  MergeAll(m, ws);
  for (int32_t i = 0; i >= 0; i = ws.symbols[i].next) out.push_back(ws.symbols[i].id);
}

}  // namespace fgemma::tokenizer_internal
