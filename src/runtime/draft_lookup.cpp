#include "runtime/draft_lookup.h"

#include <algorithm>

namespace fgemma {
namespace {
constexpr size_t kMaxMatch = 64;  // longer common suffixes rank the same: the search stays linear

bool IsWordByte(char c) { return c != ' ' && c != '\t' && c != '\n' && c != ',' && c != '.' && c != '!' && c != '?'; }
}  // namespace

void LookupDrafts(std::string_view written, std::span<const std::string> sources, size_t anchored, size_t max_bytes,
                  bool words, size_t max_candidates, std::vector<DraftCandidate>* out) {
  out->clear();
  auto add = [&](std::string_view c, size_t worth) {
    if (c.empty() || out->size() >= max_candidates) return;
    c = c.substr(0, max_bytes);
    for (const DraftCandidate& d : *out) {
      if (d.text == c) return;
    }
    out->push_back({c, worth});
  };
  for (size_t i = 0; i < std::min(anchored, sources.size()); ++i) {
    const std::string_view s = sources[i];
    if (s.size() > written.size() && s.starts_with(written)) add(s.substr(written.size()), 16);
  }
  // Per source, the longest match; then sources by match length (stable: earlier sources first).
  struct Match {
    size_t len;
    std::string_view rest;
  };
  std::vector<Match> matches;
  if (!written.empty()) {
    for (const std::string& src : sources) {
      const std::string_view s = src;
      Match best{0, {}};
      // Places j where s[j - 1] ends a copy of written's last byte; the match grows backwards.
      for (size_t j = 1; j < s.size(); ++j) {
        if (s[j - 1] != written.back()) continue;
        size_t len = 1;
        while (len < kMaxMatch && len < j && len < written.size() && s[j - 1 - len] == written[written.size() - 1 - len])
          ++len;
        if (len > best.len) best = {len, s.substr(j)};
      }
      if (best.len > 0) matches.push_back(best);
    }
  }
  std::stable_sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) { return a.len > b.len; });
  for (const Match& m : matches) add(m.rest, m.len >= 12 ? 8 : m.len >= 4 ? 4 : 2);
  if (!words) return;
  for (size_t i = anchored; i < sources.size(); ++i) {
    const std::string_view s = sources[i];
    for (size_t j = 0; j < s.size(); ++j) {
      if (IsWordByte(s[j]) && (j == 0 || !IsWordByte(s[j - 1]))) add(s.substr(j), 3);
    }
  }
}

}  // namespace fgemma
