// libFuzzer harness for tool-schema JSON: an array goes to ParseTools (the catalog of a request),
// anything else to ParseSchema; a schema that parses then validates the document itself as
// arguments (exercising ValidateArguments on arbitrary values). Seeds: fuzz/corpus/schema/.
#include <cstddef>
#include <cstdint>

#include "chat/chat_json.h"
#include "chat/request.h"
#include "chat/schema.h"
#include "fuzz_util.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fgemma::fuzz::AsText(data, size);
  auto parsed = fgemma::ParseOrderedJson(text, "fuzz");
  if (!parsed.ok()) return 0;
  const fgemma::OrderedJson& json = parsed.value();
  if (json.is_array()) {
    std::vector<std::string> warnings;
    auto tools = fgemma::ParseTools(json, "tools", &warnings);
    if (tools.ok()) {
      for (const fgemma::Tool& tool : tools.value()) {
        (void)fgemma::ValidateArguments(tool.parameters, fgemma::Json::object());
      }
    }
    return 0;
  }
  auto schema = fgemma::ParseSchema(json, "parameters");
  if (!schema.ok()) return 0;
  auto plain = fgemma::ParseJson(text, "fuzz");
  if (plain.ok()) (void)fgemma::ValidateArguments(schema.value(), plain.value());
  return 0;
}
