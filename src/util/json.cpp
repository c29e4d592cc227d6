#include "util/json.h"

#include "util/mapped_file.h"

namespace fgemma {

Status CheckJsonDepth(std::string_view text, const std::string& what, int max_depth) {
  // A loop with an explicit counter, not a recursive descent: the whole point is that the depth of
  // the text must not decide how deep this code goes. For valid JSON, brackets outside strings nest
  // exactly as the values do; for anything else the parser reports the error, and counting is
  // still safe.
  int depth = 0;
  bool in_string = false;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, which may be a quote
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          return InvalidArgument(what + ": JSON nested deeper than " + std::to_string(max_depth) + " levels at byte " +
                                 std::to_string(i));
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // an unbalanced bracket is the parser's error to report
        break;
      default: break;
    }
  }
  return Status::Ok();
}

Result<Json> ParseJson(std::string_view text, const std::string& what, int max_depth) {
  FGEMMA_RETURN_IF_ERROR(CheckJsonDepth(text, what, max_depth));
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return InvalidArgument(what + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const std::exception& e) {
    return InvalidArgument(what + ": malformed JSON: " + e.what());
  }
}

Result<Json> ReadJsonFile(const std::string& path, int max_depth) {
  FGEMMA_TRY(std::string text, ReadFileToString(path));
  return ParseJson(text, path, max_depth);
}

}  // namespace fgemma
