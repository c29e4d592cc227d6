#include "util/json.h"

#include "util/mapped_file.h"

namespace fgemma {

Result<Json> ParseJson(std::string_view text, const std::string& what) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return InvalidArgument(what + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const std::exception& e) {
    return InvalidArgument(what + ": malformed JSON: " + e.what());
  }
}

Result<Json> ReadJsonFile(const std::string& path) {
  FGEMMA_TRY(std::string text, ReadFileToString(path));
  return ParseJson(text, path);
}

}  // namespace fgemma
