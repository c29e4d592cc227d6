#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"

namespace fgemma::tokenizer_internal {
namespace {

// Words up to this many symbols are merged by scanning; the scan is O(n^2) but n is tiny.
constexpr size_t kScanWordLimit = 32;

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

// One symbol per character of a word; characters outside the vocabulary (and bytes that are not part
// of a well-formed character) become one byte token per byte, which no merge ever joins.
void SplitCharacters(const TokenizerModel& m, std::string_view word, BpeWorkspace& ws) {
  ws.symbols.clear();
  for (size_t pos = 0; pos < word.size();) {
    const auto lead = static_cast<uint8_t>(word[pos]);
    const size_t len = lead < 0x80 ? 1 : Utf8CharLength(word, pos);
    if (len == 0) {
      PushSymbol(ws, m.byte_ids[lead]);
      ++pos;
      continue;
    }
    const char32_t cp = len == 1 ? lead : Utf8Decode(word, pos, len);
    const int32_t id = cp < 0x10000 ? m.bmp_ids[cp] : m.Find(word.substr(pos, len));
    if (id >= 0 && m.BpeUsable(id)) {
      PushSymbol(ws, id);
    } else {
      for (size_t i = 0; i < len; ++i) PushSymbol(ws, m.byte_ids[static_cast<uint8_t>(word[pos + i])]);
    }
    pos += len;
  }
}

constexpr uint32_t kNoMerge = UINT32_MAX;

// Short words: ids in a small array, the best pair found by scanning (lowest rank, leftmost).
void MergeByScan(const TokenizerModel& m, const BpeWorkspace::Symbol* symbols, size_t n, std::vector<int32_t>& out) {
  int32_t ids[kScanWordLimit];
  uint32_t rank[kScanWordLimit];
  int32_t result[kScanWordLimit];
  for (size_t i = 0; i < n; ++i) ids[i] = symbols[i].id;
  auto score = [&](size_t i) {
    const Merge* merge = m.merges.Find(ids[i], ids[i + 1]);
    rank[i] = merge ? merge->rank : kNoMerge;
    result[i] = merge ? merge->result : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) m.merges.Prefetch(ids[i], ids[i + 1]);
  for (size_t i = 0; i + 1 < n; ++i) score(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;
    }
    if (rank[best] == kNoMerge) break;
    ids[best] = result[best];
    // Close the gap: ids has n entries, rank and result n - 1 (one per pair).
    for (size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
    for (size_t i = best + 1; i + 2 < n; ++i) {
      rank[i] = rank[i + 1];
      result[i] = result[i + 1];
    }
    --n;
    if (best > 0) m.merges.Prefetch(ids[best - 1], ids[best]);
    if (best + 1 < n) m.merges.Prefetch(ids[best], ids[best + 1]);
    if (best > 0) score(best - 1);
    if (best + 1 < n) score(best);
  }
  out.insert(out.end(), ids, ids + n);
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

// Long words: symbols [begin, end) as a linked list, candidate pairs in a heap.
void MergeByHeap(const TokenizerModel& m, BpeWorkspace& ws, int32_t begin, int32_t end, std::vector<int32_t>& out) {
  auto& symbols = ws.symbols;
  symbols[begin].prev = -1;
  symbols[end - 1].next = -1;
  ws.heap.clear();
  for (int32_t i = begin; i + 1 < end; ++i) PushCandidate(m, ws, i);
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
  for (int32_t i = begin; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

void EncodeWord(const TokenizerModel& m, std::string_view word, BpeWorkspace& ws, WordCache& cache,
                std::vector<int32_t>& out) {
  const bool cacheable = word.size() <= WordCache::kMaxWordBytes;
  const uint64_t hash = cacheable ? WordCache::Hash(word) : 0;
  if (cacheable && cache.Lookup(word, hash, out)) return;
  const size_t first = out.size();
  SplitCharacters(m, word, ws);
  const auto n = static_cast<int32_t>(ws.symbols.size());
  if (static_cast<size_t>(n) <= kScanWordLimit) {
    MergeByScan(m, ws.symbols.data(), n, out);
  } else {
    MergeByHeap(m, ws, 0, n, out);
  }
  if (cacheable) cache.Insert(word, hash, out.data() + first, out.size() - first);
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
  WordCache& cache = WordCache::ForThread(m.instance_id);
  // Cut before each "▁" that follows a character no token joins to a "▁" (see bpe.h).
  size_t word_start = 0;
  char32_t prev = kSpaceMarkerCp;
  for (size_t pos = 0; pos < text.size();) {
    const auto lead = static_cast<uint8_t>(text[pos]);
    const size_t len = lead < 0x80 ? 1 : Utf8CharLength(text, pos);
    if (len == 0) {
      prev = 0x80000000u | lead;  // how bridge_chars spells a stray byte
      ++pos;
      continue;
    }
    const char32_t cp = len == 1 ? lead : Utf8Decode(text, pos, len);
    if (cp == kSpaceMarkerCp && prev != kSpaceMarkerCp && pos > word_start &&
        !std::binary_search(m.bridge_chars.begin(), m.bridge_chars.end(), prev)) {
      EncodeWord(m, text.substr(word_start, pos - word_start), ws, cache, out);
      word_start = pos;
    }
    prev = cp;
    pos += len;
  }
  EncodeWord(m, text.substr(word_start), ws, cache, out);
}

}  // namespace fgemma::tokenizer_internal
