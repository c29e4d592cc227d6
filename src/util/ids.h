// Token-id lists as users write them: whitespace-separated integers or a JSON array.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace fgemma {

// `what` names the source in errors ("ids.txt").
Result<std::vector<int32_t>> ParseIds(std::string_view text, const std::string& what);
Result<std::vector<int32_t>> ReadIdsFile(const std::string& path);

}  // namespace fgemma
