#include "runtime/token_constraint.h"

#include <algorithm>

namespace fgemma {

Result<ConstraintVocab> ConstraintVocab::Build(const Tokenizer& tok) {
  ConstraintVocab v;
  v.tokenizer_ = &tok;
  const int32_t n = tok.vocab_size();
  v.bytes_.resize(static_cast<size_t>(n));
  v.symbol_of_.assign(static_cast<size_t>(n), -2);
  v.symbol_token_.assign(kNumSymbols - 256, -1);
  const std::pair<const char*, int> symbols[] = {
      {"<start_function_call>", kSymStartCall}, {"<end_function_call>", kSymEndCall},
      {"<escape>", kSymEscape}, {"<start_function_response>", kSymStartResponse},
      {"<end_of_turn>", kSymEndOfTurn}, {"<eos>", kSymEos}};
  for (const auto& [text, sym] : symbols) {
    const int32_t id = tok.TokenId(text);
    if (id < 0) return Unsupported(std::string("tokenizer has no ") + text + " token; it is not a FunctionGemma tokenizer");
    v.symbol_of_[static_cast<size_t>(id)] = static_cast<int16_t>(sym);
    v.symbol_token_[static_cast<size_t>(sym - 256)] = id;
  }
  // Function-calling markers the grammar never emits as text.
  for (const char* text : {"<start_function_declaration>", "<end_function_declaration>", "<end_function_response>"}) {
    if (const int32_t id = tok.TokenId(text); id >= 0) v.symbol_of_[static_cast<size_t>(id)] = -3;
  }
  for (int32_t id = 0; id < n; ++id) {
    if (v.symbol_of_[static_cast<size_t>(id)] != -2) continue;
    const std::string_view text = tok.TokenText(id);
    if (tok.IsSpecial(id) || text.rfind("<unused", 0) == 0) continue;  // never generated in a call turn
    auto decoded = tok.Decode(std::span<const int32_t>(&id, 1));
    if (!decoded.ok() || decoded->empty()) continue;
    v.bytes_[static_cast<size_t>(id)] = std::move(decoded).value();
    v.symbol_of_[static_cast<size_t>(id)] = -1;
    v.order_.push_back(id);
  }
  for (auto& s : v.symbol_of_) {
    if (s == -3) s = -2;
  }
  // Text room each byte token needs: its length, or more when it ends in a lead byte whose
  // character would continue past it (CallMatcher::FitsWholeCharacter checks i + 1 + k <= room for
  // a lead byte at offset i with k continuation bytes).
  v.need_.assign(static_cast<size_t>(n), 0);
  for (int32_t id : v.order_) {
    const std::string& b = v.bytes_[static_cast<size_t>(id)];
    size_t need = b.size();
    for (size_t i = 0; i < b.size(); ++i) {
      const uint8_t c = static_cast<uint8_t>(b[i]);
      const size_t k = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
      need = std::max(need, i + 1 + k);
    }
    v.need_[static_cast<size_t>(id)] = static_cast<uint16_t>(std::min<size_t>(need, 65535));
    v.max_need_ = std::max(v.max_need_, need);
  }
  if (v.max_need_ > CallMatcher::kTextMargin)  // CallMatcher::TextState relies on it near length bounds
    return Unsupported("tokenizer has a token of " + std::to_string(v.max_need_) + " bytes; constrained decoding supports up to " +
                       std::to_string(CallMatcher::kTextMargin));
  v.by_need_ = v.order_;
  std::stable_sort(v.by_need_.begin(), v.by_need_.end(),
                   [&](int32_t a, int32_t b) { return v.need_[static_cast<size_t>(a)] > v.need_[static_cast<size_t>(b)]; });
  std::sort(v.order_.begin(), v.order_.end(), [&](int32_t a, int32_t b) { return v.bytes_[a] < v.bytes_[b]; });
  v.lcp_.resize(v.order_.size());
  for (size_t i = 0; i < v.order_.size(); ++i) {
    const std::string& cur = v.bytes_[static_cast<size_t>(v.order_[i])];
    v.max_len_ = std::max(v.max_len_, cur.size());
    size_t l = 0;
    if (i > 0) {
      const std::string& prev = v.bytes_[static_cast<size_t>(v.order_[i - 1])];
      while (l < prev.size() && l < cur.size() && prev[l] == cur[l]) ++l;
    }
    v.lcp_[i] = static_cast<uint16_t>(std::min<size_t>(l, 65535));
  }
  return v;
}

ConstraintVocab::Scratch ConstraintVocab::NewScratch(const CallMatcher& prototype) const {
  Scratch s;
  s.states.assign(max_len_ + 1, prototype);
  return s;
}

const ConstraintVocab::TextSet& ConstraintVocab::SharedTextSet(uint32_t key) const {
  auto find = [&]() -> const TextSet* {  // caller holds the lock
    for (const auto& [k, set] : text_sets_->sets) {
      if (k == key) return set.get();
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(text_sets_->mu);
    if (const TextSet* set = find()) return *set;
  }
  // Built outside the lock (a concurrent build of the same key yields the same set): each byte
  // token's bytes through the text rules alone (CallMatcher::TextAccepts), a few ms, where a
  // search through whole matchers took ~45 ms.
  auto set = std::make_unique<TextSet>();
  set->mask.assign((bytes_.size() + 63) / 64, 0);
  for (int32_t id : order_) {
    if (!CallMatcher::TextAccepts(key, bytes_[static_cast<size_t>(id)])) continue;
    set->mask[static_cast<uint32_t>(id) >> 6] |= 1ull << (id & 63);
    ++set->count;
  }
  std::lock_guard<std::mutex> lock(text_sets_->mu);
  if (const TextSet* existing = find()) return *existing;
  text_sets_->sets.emplace_back(key, std::move(set));
  return *text_sets_->sets.back().second;
}

void ConstraintVocab::Allowed(const CallMatcher& state, Scratch& scratch, std::vector<int32_t>* out,
                              const TextSet** text) const {
  *text = nullptr;
  uint32_t key = 0, room = 0;
  // In free text, and at the turn's start where a text answer may begin (its first byte starts the
  // text), the ordinary tokens accepted are the text state's shared set (cut to the room left).
  if (state.TextState(&key, &room) || state.TextStart(&key, &room)) {
    const TextSet& base = SharedTextSet(key);
    if (room >= max_need_) {
      *text = &base;
    } else {
      // Near the cap: the full-room set less the tokens that need more room than is left (the same
      // test the matcher applies byte by byte): a bitmask pass.
      TextSet& set = scratch.room_set;
      set.mask.assign(base.mask.begin(), base.mask.end());
      set.count = base.count;
      for (int32_t id : by_need_) {  // longest needs first: stop at the first that fits
        if (need_[static_cast<size_t>(id)] <= room) break;
        uint64_t& word = set.mask[static_cast<uint32_t>(id) >> 6];
        const uint64_t bit = 1ull << (id & 63);
        if (word & bit) {
          word &= ~bit;
          --set.count;
        }
      }
      *text = &set;
    }
    out->clear();
  } else {
    Search(state, scratch, out);
  }
  for (int sym = 256; sym < kNumSymbols; ++sym) {
    const int32_t id = symbol_token_[static_cast<size_t>(sym - 256)];
    if (id >= 0 && state.Accepts(sym)) out->push_back(id);
  }
}

void ConstraintVocab::Search(const CallMatcher& state, Scratch& scratch, std::vector<int32_t>* out) const {
  out->clear();
  auto& states = scratch.states;
  states[0] = state;
  size_t valid = 0;                  // states[0..valid] hold the current prefix's states
  size_t refused = SIZE_MAX;         // length of the last refused prefix
  for (size_t i = 0; i < order_.size(); ++i) {
    const size_t l = lcp_[i];
    if (refused <= l) continue;      // shares a prefix the matcher already refused
    refused = SIZE_MAX;
    const std::string& b = bytes_[static_cast<size_t>(order_[i])];
    size_t d = std::min(l, valid);
    bool ok = true;
    for (; d < b.size(); ++d) {
      states[d + 1] = states[d];
      if (!states[d + 1].Feed(static_cast<uint8_t>(b[d]))) {
        refused = d + 1;
        ok = false;
        break;
      }
    }
    valid = d;
    if (ok) out->push_back(order_[i]);
  }
}

std::string ConstraintVocab::TokenText(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  if (symbol_of_[static_cast<size_t>(id)] >= 256) return std::string(tokenizer_->TokenText(id));
  return bytes_[static_cast<size_t>(id)];
}

bool ConstraintVocab::FeedToken(CallMatcher& m, int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  const int16_t sym = symbol_of_[static_cast<size_t>(id)];
  if (sym >= 256) return m.Feed(sym);
  if (sym == -2) return false;
  return m.FeedBytes(bytes_[static_cast<size_t>(id)]);
}

void ConstraintVocab::ForcedTokens(const CallMatcher& state, std::vector<int32_t>* out) const {
  out->clear();
  CallMatcher m = state;
  std::string text;  // pending forced bytes
  auto flush = [&] {
    if (text.empty()) return;
    EncodeOptions eo;
    eo.parse_special = false;
    for (int32_t id : tokenizer_->Encode(text, eo)) out->push_back(id);
    text.clear();
  };
  for (int guard = 0; guard < 512 && !m.Done(); ++guard) {
    int only = -1;
    for (int sym = 0; sym < kNumSymbols; ++sym) {
      if (sym >= 256 && symbol_token_[static_cast<size_t>(sym - 256)] < 0) continue;
      if (m.Accepts(sym)) {
        if (only != -1) {
          only = -2;
          break;
        }
        only = sym;
      }
    }
    if (only < 0) break;
    m.Feed(only);
    if (only < 256) {
      text.push_back(static_cast<char>(only));
    } else {
      flush();
      out->push_back(symbol_token_[static_cast<size_t>(only - 256)]);
    }
  }
  // Text forced up to a choice: its last canonical token is not forced, because a longer token
  // spanning it and the choice's first bytes is allowed too, and may be the one the model picks
  // ("turn_" + {"on_...", "off_..."} forces "o": the model's own token is "on", and forcing "o"
  // made a fine-tuned model write "off"). The head chooses from there over every allowed token.
  const bool text_at_choice = !m.Done() && !text.empty();
  flush();
  if (text_at_choice) out->pop_back();
}

}  // namespace fgemma
