// Small helpers shared by the GGUF reader and writer (not part of the public API).
#pragma once

#include <string>
#include <string_view>

namespace fgemma::gguf_internal {

// 'name', for messages.
inline std::string Quoted(std::string_view s) {
  std::string q;
  q.reserve(s.size() + 2);
  q.push_back('\'');
  q.append(s);
  q.push_back('\'');
  return q;
}

}  // namespace fgemma::gguf_internal
