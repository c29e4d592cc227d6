#include "runtime/draft_lookup.h"

#include <algorithm>

namespace fgemma {
namespace {
constexpr size_t kMaxMatch = 64;  // longer common suffixes rank the same: the search stays linear
}  // namespace

std::string_view LookupDraft(std::string_view written, std::span<const std::string> sources, size_t anchored,
                             size_t max_bytes) {
  std::string_view best;
  size_t best_len = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string_view s = sources[i];
    if (i < anchored && s.size() > written.size() && s.starts_with(written)) {
      // Same beginning as an earlier output: nothing can match better.
      return s.substr(written.size(), max_bytes);
    }
    if (written.empty()) continue;
    // Places j where s[j - 1] ends a copy of written's last byte; the match grows backwards.
    for (size_t j = 1; j < s.size(); ++j) {
      if (s[j - 1] != written.back()) continue;
      size_t len = 1;
      while (len < kMaxMatch && len < j && len < written.size() && s[j - 1 - len] == written[written.size() - 1 - len])
        ++len;
      if (len > best_len) {
        best_len = len;
        best = s.substr(j, max_bytes);
      }
    }
  }
  return best;
}

}  // namespace fgemma
