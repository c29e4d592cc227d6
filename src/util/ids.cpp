#include "util/ids.h"

#include <cctype>
#include <limits>

#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {

Result<std::vector<int32_t>> ParseIds(std::string_view text, const std::string& what) {
  size_t first = 0;
  while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first]))) ++first;
  std::vector<int32_t> ids;
  if (first < text.size() && text[first] == '[') {
    FGEMMA_TRY(Json j, ParseJson(text, what));
    if (!j.is_array()) return InvalidArgument(what + ": expected a JSON array of token ids");
    for (size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_number_integer() || j[i].get<int64_t>() < 0 || j[i].get<int64_t>() > std::numeric_limits<int32_t>::max())
        return InvalidArgument(what + ": element " + std::to_string(i) + " is not a non-negative 32-bit integer");
      ids.push_back(static_cast<int32_t>(j[i].get<int64_t>()));
    }
    return ids;
  }
  size_t i = first;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const size_t start = i;
    int64_t v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > std::numeric_limits<int32_t>::max()) return InvalidArgument(what + ": id at byte " + std::to_string(start) + " is too large");
      ++i;
    }
    if (i == start || (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))))
      return InvalidArgument(what + ": expected a non-negative integer at byte " + std::to_string(start));
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

Result<std::vector<int32_t>> ReadIdsFile(const std::string& path) {
  FGEMMA_TRY(std::string text, ReadFileToString(path));
  return ParseIds(text, path);
}

}  // namespace fgemma
