// libFuzzer harness for the model-output call parser (<start_function_call>call:NAME{...}
// <end_function_call>, <escape>-quoted strings), with a fixed catalog (schema checks on) and
// without one. Seeds: fuzz/corpus/parse_call/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "chat/chat_json.h"
#include "chat/parse_call.h"
#include "chat/request.h"
#include "fuzz_util.h"

namespace {

const std::vector<fgemma::Tool>& Catalog() {
  static const std::vector<fgemma::Tool> tools = [] {
    auto json = fgemma::ParseOrderedJson(R"([
      {"type":"function","function":{"name":"get_weather","description":"Weather",
        "parameters":{"type":"object","properties":{
          "city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},
          "days":{"type":"integer"},"hourly":{"type":"boolean"},"ratio":{"type":"number"},
          "tags":{"type":"array","items":{"type":"string"}},
          "where":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}}}},
          "required":["city"]}}},
      {"type":"function","function":{"name":"noop","description":"No arguments"}}])",
                                         "catalog");
    if (!json.ok()) std::abort();
    auto parsed = fgemma::ParseTools(json.value());
    if (!parsed.ok()) std::abort();
    return parsed.value();
  }();
  return tools;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fgemma::fuzz::AsText(data, size);
  (void)fgemma::ParseModelOutput(text, Catalog());
  (void)fgemma::ParseModelOutput(text);
  return 0;
}
