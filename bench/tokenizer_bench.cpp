// Tokenizer speed: loading FunctionGemma's tokenizer.json (14 MB, 262,144 tokens, 514,906 merges),
// encoding a FunctionGemma tool-catalog prompt (~850 tokens) and mixed text, decoding.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/word_cache.h"
#include "util/json.h"

namespace {

using fgemma::Json;
using fgemma::Tokenizer;

std::string Fixture(const std::string& relative) { return std::string(FGEMMA_SHARED_DIR) + "/fixtures/" + relative; }

const Tokenizer& SharedTokenizer() {
  static const Tokenizer* t = [] {
    auto r = Tokenizer::FromFile(Fixture("models/mini-bf16"));
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::exit(1);
    }
    return new Tokenizer(std::move(r).value());
  }();
  return *t;
}

Json ReadFixtureJson(const std::string& relative) {
  auto j = fgemma::ReadJsonFile(Fixture(relative));
  if (!j.ok()) {
    std::fprintf(stderr, "%s\n", j.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(j).value();
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Escaped(const std::string& s) { return "<escape>" + s + "<escape>"; }

// ["a","b"] -> [<escape>a<escape>,<escape>b<escape>]
std::string EscapedList(const Json& strings) {
  std::string out = "[";
  for (size_t i = 0; i < strings.size(); ++i) out += (i ? "," : "") + Escaped(strings[i].get<std::string>());
  return out + "]";
}

// The developer turn FunctionGemma's chat template renders for flat tool schemas (string, number,
// integer and boolean properties, string enums), which is what smart-home-tools.json holds.
std::string ToolCatalogPrompt() {
  const Json tools = ReadFixtureJson("chat/smart-home-tools.json");
  std::string p = "<start_of_turn>developer\nYou are a model that can do function calling with the following functions";
  for (const Json& tool : tools) {
    const Json& f = tool["function"];
    const Json& params = f["parameters"];
    p += "<start_function_declaration>declaration:" + f["name"].get<std::string>() + "{description:" +
         Escaped(f["description"].get<std::string>()) + ",parameters:{properties:{";
    bool first = true;
    for (const auto& [key, value] : params["properties"].items()) {  // nlohmann objects iterate sorted, like dictsort
      if (!first) p += ",";
      first = false;
      p += key + ":{description:" + Escaped(value["description"].get<std::string>());
      if (value.contains("enum")) p += ",enum:" + EscapedList(value["enum"]);
      p += ",type:" + Escaped(Upper(value["type"].get<std::string>())) + "}";
    }
    p += "},";
    if (params.contains("required")) p += "required:" + EscapedList(params["required"]) + ",";
    p += "type:" + Escaped(Upper(params["type"].get<std::string>())) + "}}<end_function_declaration>";
  }
  p += "<end_of_turn>\n<start_of_turn>user\nTurn on the kitchen lights at 40 percent, warm please.<end_of_turn>\n<start_of_turn>model\n";
  return p;
}

// All golden-dev texts (prose, code, JSON, several scripts, emoji, whitespace runs) joined by newlines.
std::string MixedText() {
  const Json rows = ReadFixtureJson("tokenizer/golden-dev.json");
  std::string text;
  for (const Json& row : rows) text += row["text"].get<std::string>() + "\n";
  return text;
}

void BM_LoadTokenizerJson(benchmark::State& state) {
  const std::string path = Fixture("models/mini-bf16");
  for (auto _ : state) {
    auto t = Tokenizer::FromFile(path);
    if (!t.ok()) state.SkipWithError(t.status().ToString().c_str());
    benchmark::DoNotOptimize(t);
  }
}
// CPU time counts every thread of the process (loading resolves merges on a second thread).
BENCHMARK(BM_LoadTokenizerJson)->Unit(benchmark::kMillisecond)->Iterations(5)->MeasureProcessCPUTime();

std::string LongUnbrokenRun() {
  std::string text;
  for (int i = 0; text.size() < 1 << 20; ++i) text += "abc" + std::to_string(i * 7919 % 100003) + "xyz";
  return text;
}

// Encodes `text` repeatedly. With `cold`, the calling thread's word cache is emptied before every
// pass, so only repetition within the text itself helps (the first encoding of new text); without,
// the steady state of a process that keeps encoding similar text.
void RunEncode(benchmark::State& state, const std::string& text, bool add_bos) {
  const Tokenizer& t = SharedTokenizer();
  const bool cold = state.range(0) != 0;
  size_t tokens = 0;
  for (auto _ : state) {
    if (cold) fgemma::tokenizer_internal::WordCache::ClearForThread();
    auto ids = t.Encode(text, {.add_bos = add_bos});
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["tokens"] = static_cast<double>(tokens);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void BM_EncodeToolCatalog(benchmark::State& state) { RunEncode(state, ToolCatalogPrompt(), true); }
void BM_EncodeMixedText(benchmark::State& state) { RunEncode(state, MixedText(), false); }
// One stretch with no space or added token: the worst case for a single BPE run (heap path).
void BM_EncodeLongUnbrokenRun(benchmark::State& state) { RunEncode(state, LongUnbrokenRun(), false); }
BENCHMARK(BM_EncodeToolCatalog)->ArgName("cold")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeMixedText)->ArgName("cold")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeLongUnbrokenRun)->ArgName("cold")->Arg(1)->Unit(benchmark::kMillisecond);

void BM_DecodeMixedText(benchmark::State& state) {
  const Tokenizer& t = SharedTokenizer();
  const auto ids = t.Encode(MixedText());
  for (auto _ : state) {
    auto text = t.Decode(ids);
    benchmark::DoNotOptimize(text);
  }
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ids.size()));
}
BENCHMARK(BM_DecodeMixedText)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
