#include "runtime/draft_lookup.h"

#include <algorithm>

namespace fgemma {
namespace {
constexpr size_t kMaxMatch = 64;  // longer common suffixes rank the same: the search stays linear
constexpr size_t kTies = 3;       // places per source with the longest match

bool IsWordByte(char c) { return c != ' ' && c != '\t' && c != '\n' && c != ',' && c != '.' && c != '!' && c != '?'; }
}  // namespace

const char* DraftSourceName(DraftSource s) {
  switch (s) {
    case DraftSource::kHistory: return "history";
    case DraftSource::kHistoryMatch: return "history-match";
    case DraftSource::kTextMatch: return "text-match";
    case DraftSource::kWord: return "word";
    case DraftSource::kName: return "name";
    case DraftSource::kSlot: return "slot";
    case DraftSource::kList: return "list";
    case DraftSource::kClose: return "close";
    case DraftSource::kForm: return "form";
  }
  return "?";
}

void LookupDrafts(std::string_view written, std::span<const std::string> sources, size_t anchored, size_t max_bytes,
                  bool words, size_t max_candidates, std::vector<DraftCandidate>* out, bool words_first) {
  out->clear();
  anchored = std::min(anchored, sources.size());
  auto add = [&](std::string_view c, size_t worth, DraftSource source) {
    if (c.empty() || out->size() >= max_candidates) return;
    c = c.substr(0, max_bytes);
    for (const DraftCandidate& d : *out) {
      if (d.text == c) return;
    }
    out->push_back({c, worth, source});
  };
  // Words of the utterance (the first source after the earlier outputs), each from its start.
  auto add_words = [&](size_t worth) {
    if (!words || anchored >= sources.size()) return;
    const std::string_view s = sources[anchored];
    for (size_t j = 0; j < s.size(); ++j) {
      if (IsWordByte(s[j]) && (j == 0 || !IsWordByte(s[j - 1]))) add(s.substr(j), worth, DraftSource::kWord);
    }
  };
  if (words_first) add_words(6);
  for (size_t i = 0; i < anchored; ++i) {
    const std::string_view s = sources[i];
    if (s.size() > written.size() && s.starts_with(written)) add(s.substr(written.size()), 16, DraftSource::kHistory);
  }
  // Per source, the longest match (at up to kTies places of that length: "<escape>" both
  // opens and closes a value, and only the grammar knows which one continues); then sources by match
  // length (stable: earlier sources first, then earlier places).
  struct Match {
    size_t len;
    std::string_view rest;
    bool history;
  };
  std::vector<Match> matches;
  if (!written.empty()) {
    for (size_t i = 0; i < sources.size(); ++i) {
      const std::string_view s = sources[i];
      const size_t first = matches.size();
      size_t best = 0;
      // Places j where s[j - 1] ends a copy of written's last byte; the match grows backwards.
      for (size_t j = 1; j < s.size(); ++j) {
        if (s[j - 1] != written.back()) continue;
        size_t len = 1;
        while (len < kMaxMatch && len < j && len < written.size() && s[j - 1 - len] == written[written.size() - 1 - len])
          ++len;
        if (len > best) {
          best = len;
          matches.resize(first);
        }
        if (len == best && matches.size() - first < kTies) matches.push_back({len, s.substr(j), i < anchored});
      }
    }
  }
  std::stable_sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) { return a.len > b.len; });
  for (const Match& m : matches)
    add(m.rest, m.len >= 12 ? 8 : m.len >= 4 ? 4 : 2, m.history ? DraftSource::kHistoryMatch : DraftSource::kTextMatch);
  if (!words_first) add_words(3);
}

}  // namespace fgemma
