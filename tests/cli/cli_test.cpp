// The fgemma CLI: synth, score and generate, end to end on shipped fixtures.
#include <gtest/gtest.h>

#include <fstream>
#include <utility>
#include <vector>

#include "kernels/matmul.h"
#include "test_support.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

std::string Cli() { return test::CliPath(); }

TEST(Cli, ScorePrintsTopLogitsMatchingTheReference) {
  const Json golden = test::LoadGolden("tiny-gqa-f32.json");
  const std::string dir = test::TempDir();
  ASSERT_TRUE(WriteStringToFile(dir + "/ids.json", golden["tokens"].dump()).ok());
  std::string out;
  ASSERT_EQ(test::RunCommand(Cli() + " score --model " + test::FixturePath("models/tiny-gqa-f32") + " --ids " + dir +
                                 "/ids.json --positions 0,39 --top 3 --logits-out " + dir + "/logits.bin",
                             &out),
            0);
  std::vector<Json> lines;
  size_t start = 0;
  while (start < out.size()) {
    const size_t nl = out.find('\n', start);
    lines.push_back(Json::parse(out.substr(start, nl - start)));
    start = nl + 1;
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["pos"], 39);
  ASSERT_EQ(lines[1]["top"].size(), 3u);
  const auto& ref = golden["logits"][39];
  for (const auto& e : lines[1]["top"]) EXPECT_NEAR(e[1].get<double>(), ref[e[0].get<size_t>()].get<double>(), 1e-4);
  auto bin = ReadFileToString(dir + "/logits.bin").value();
  ASSERT_EQ(bin.size(), 2u * 512 * 4);
  float v;
  std::memcpy(&v, bin.data() + (512 + 7) * 4, 4);
  EXPECT_NEAR(v, ref[7].get<double>(), 1e-4);
}

TEST(Cli, GenerateReproducesGreedyGolden) {
  const Json golden = test::LoadGolden("tiny-mqa-bf16.json");
  const std::string dir = test::TempDir();
  std::string ids;
  for (auto& t : golden["greedy"]["prompt"]) ids += std::to_string(t.get<int>()) + " ";
  ASSERT_TRUE(WriteStringToFile(dir + "/ids.txt", ids).ok());
  std::string out;
  ASSERT_EQ(test::RunCommand(Cli() + " generate --model " + test::FixturePath("models/tiny-mqa-bf16") + " --ids " + dir +
                                 "/ids.txt --max-new " + std::to_string(golden["greedy"]["tokens"].size()),
                             &out),
            0);
  EXPECT_EQ(Json::parse(out), golden["greedy"]["tokens"]);
}

// Text in, text out: --prompt streams the decoded continuation, the same tokens --ids gives for the
// prompt's ids (<bos> + the text), decoded; --ids --text prints that same text.
TEST(Cli, GeneratePromptStreamsTheDecodedTextOfTheIdsPath) {
  const std::string model = test::FixturePath("models/mini-bf16");
  const std::string dir = test::TempDir();
  std::string ids, by_ids, text, ids_as_text, decoded;
  ASSERT_EQ(test::RunCommand(Cli() + " tokenize --model " + model + " --bos 'The kitchen lights are'", &ids), 0);
  ASSERT_TRUE(WriteStringToFile(dir + "/ids.txt", ids).ok());
  ASSERT_EQ(test::RunCommand(Cli() + " generate --model " + model + " --ids " + dir + "/ids.txt --max-new 12", &by_ids), 0);
  while (!by_ids.empty() && by_ids.back() == '\n') by_ids.pop_back();
  ASSERT_EQ(test::RunCommand(Cli() + " detokenize --model " + model + " --skip-special '" + by_ids + "'", &decoded), 0)
      << decoded;
  ASSERT_EQ(test::RunCommand(Cli() + " generate --model " + model + " --prompt 'The kitchen lights are' --max-new 12", &text), 0);
  ASSERT_EQ(test::RunCommand(Cli() + " generate --model " + model + " --ids " + dir + "/ids.txt --text --max-new 12", &ids_as_text), 0);
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text, ids_as_text);
  EXPECT_EQ(text, decoded);
  std::string err;
  EXPECT_NE(test::RunCommand(Cli() + " generate --model " + model + " 2>&1", &err), 0);
  EXPECT_NE(err.find("give either --prompt TEXT or --ids FILE"), std::string::npos) << err;
}

TEST(Cli, SynthWritesALoadableCheckpointAndErrorsAreClear) {
  const std::string dir = test::TempDir();
  std::string out;
  ASSERT_EQ(test::RunCommand(Cli() + " synth --config tiny-mqa --seed 1 --dtype f32 --out " + dir + "/m", &out), 0);
  auto a = ReadFileToString(dir + "/m/model.safetensors").value();
  EXPECT_GT(a.size(), 1000u);
  EXPECT_NE(test::RunCommand(Cli() + " synth --config nope --seed 1 --out " + dir + "/x 2>&1", &out), 0);
  EXPECT_NE(out.find("unknown model config 'nope'"), std::string::npos) << out;
  out.clear();
  EXPECT_NE(test::RunCommand(Cli() + " score --model " + dir + "/missing --ids " + dir + "/none 2>&1", &out), 0);
  EXPECT_NE(out.find("error"), std::string::npos) << out;
}

// Issue 16, finding 6, through the CLI: a FIFO as `--cache` used to hang `fgemma call` in open
// (`timeout` turns a hang into exit 124), a symlink planted at the old `FILE.tmp` redirected the
// cache write into its target.
TEST(Cli, CallRefusesANonRegularCacheAndNeverWritesThroughALink) {
  const std::string dir = test::TempDir();
  const std::string call = "timeout 60 " + Cli() + " call --model " + test::FixturePath("models/mini-bf16") + " --tools " +
                           test::FixturePath("chat/smart-home-tools.json") + " --tool-choice required";
  ASSERT_EQ(test::RunCommand("mkfifo " + dir + "/fifo.kv"), 0);
  std::string out;
  EXPECT_EQ(test::RunCommand(call + " --cache " + dir + "/fifo.kv 'lights on' 2>&1", &out), 1) << out;
  EXPECT_NE(out.find(dir + "/fifo.kv: is a FIFO"), std::string::npos) << out;

  ASSERT_TRUE(WriteStringToFile(dir + "/victim", "precious").ok());
  ASSERT_EQ(test::RunCommand("ln -s " + dir + "/victim " + dir + "/c.kv.tmp"), 0);
  out.clear();
  EXPECT_EQ(test::RunCommand(call + " --cache " + dir + "/c.kv 'lights on' 2>&1", &out), 0) << out;
  EXPECT_EQ(ReadFileToString(dir + "/victim").value(), "precious");
  EXPECT_TRUE(ReadFileToString(dir + "/c.kv").ok());
}

// Issue 14: `call --no-draft` writes the same calls as the default (drafts on); with --repeat 2
// the second call drafts from the first, and the timing reports passes, drafted and accepted tokens.
TEST(Cli, CallNoDraftWritesTheSameCalls) {
  const std::string call = "timeout 120 " + Cli() + " call --model " + test::FixturePath("models/mini-bf16") + " --tools " +
                           test::FixturePath("chat/smart-home-tools.json") + " --tool-choice required --threads 2 --repeat 2";
  std::string with, without;
  ASSERT_EQ(test::RunCommand(call + " 'turn on the kitchen lights'", &with), 0) << with;
  ASSERT_EQ(test::RunCommand(call + " --no-draft 'turn on the kitchen lights'", &without), 0) << without;
  const std::string w2 = with.substr(with.find('\n') + 1), n2 = without.substr(without.find('\n') + 1);
  const Json a = Json::parse(w2), b = Json::parse(n2);
  EXPECT_EQ(a["calls"], b["calls"]);
  EXPECT_EQ(b["timing"]["drafted_tokens"], 0);
  EXPECT_GT(a["timing"]["accepted_tokens"].get<size_t>(), 0u) << w2;
  EXPECT_LT(a["timing"]["passes"].get<size_t>(), b["timing"]["passes"].get<size_t>()) << w2 << n2;
}

// Issue 14: `bench --calls` times the call set with and without drafts and reports passes per call.
TEST(Cli, BenchCallsReportsPassesWithAndWithoutDrafts) {
  const std::string src = FGEMMA_SOURCE_DIR;
  std::string out;
  ASSERT_EQ(test::RunCommand("timeout 300 " + Cli() + " bench --model " + test::FixturePath("models/mini-q8_0.gguf") +
                                 " --threads 2 --calls " + src + "/examples/smart-home/calls.jsonl --tools " + src +
                                 "/examples/smart-home/tools.json --rounds 1 --json",
                             &out),
            0)
      << out;
  const Json j = Json::parse(out);
  EXPECT_EQ(j["distinct_calls"].get<size_t>(), 24u);
  const Json &draft = j["modes"]["draft"], &plain = j["modes"]["no_draft"];
  EXPECT_EQ(draft["tokens_per_call"], plain["tokens_per_call"]);
  EXPECT_EQ(plain["drafted_per_call"].get<double>(), 0.0);
  EXPECT_GT(draft["accepted_per_call"].get<double>(), 0.0);
  EXPECT_LT(draft["passes_per_call"].get<double>(), plain["passes_per_call"].get<double>());
  EXPECT_GT(draft["p50_ms"].get<double>(), 0.0);
  out.clear();
  EXPECT_EQ(test::RunCommand(Cli() + " bench --model " + test::FixturePath("models/mini-q8_0.gguf") + " --calls " + src +
                                 "/examples/smart-home/calls.jsonl 2>&1",
                             &out),
            1);
  EXPECT_NE(out.find("--calls needs --tools"), std::string::npos) << out;
}

// Issue 14: `bench --pass-rows` times body passes of several rows at each decode context.
TEST(Cli, BenchPassRowsReportsEachContextAndRowCount) {
  std::string out;
  ASSERT_EQ(test::RunCommand(Cli() + " bench --model " + test::FixturePath("models/mini-q8_0.gguf") +
                                 " --threads 2 --prefill 8 --decode-contexts 16 40 --decode-steps 2 --pass-rows 1 4"
                                 " --repetitions 1 --json",
                             &out),
            0)
      << out;
  const Json j = Json::parse(out);
  std::vector<std::pair<size_t, size_t>> passes;  // (context, rows)
  for (const Json& r : j["results"]) {
    if (r["metric"] == "pass_ms") {
      EXPECT_GT(r["value"].get<double>(), 0.0) << out;
      passes.emplace_back(r["n"].get<size_t>(), r["rows"].get<size_t>());
    }
  }
  const std::vector<std::pair<size_t, size_t>> want = {{16, 1}, {16, 4}, {40, 1}, {40, 4}};
  EXPECT_EQ(passes, want) << out;
}

// --version names the kernels chosen for this CPU (as bench and fgemma_kernel_target do).
TEST(Cli, VersionNamesTheKernelTarget) {
  std::string out;
  ASSERT_EQ(test::RunCommand(Cli() + " --version", &out), 0);
  EXPECT_EQ(out.rfind("fgemma ", 0), 0u) << out;
  EXPECT_NE(out.find(std::string("(kernels ") + KernelTargetName() + ")"), std::string::npos) << out;
}

}  // namespace
}  // namespace fgemma

namespace fgemma {
namespace {

// `fgemma bench --calls --clients` (issue 14): the call set from concurrent callers, without and
// with batched passes; batched, a pass serves several rows and a call takes fewer passes.
TEST(CliBench, ConcurrentClientsWithAndWithoutBatching) {
  const std::string bench = test::CliPath() + " bench --model " + test::FixturePath("models/mini-bf16") +
                            " --threads 2 --calls " + FGEMMA_SOURCE_DIR + "/examples/smart-home/calls.jsonl --tools " +
                            FGEMMA_SOURCE_DIR + "/examples/smart-home/tools.json --rounds 1 --json";
  std::string out;
  ASSERT_EQ(test::RunCommand(bench + " --clients 1,3", &out), 0) << out;
  const Json report = Json::parse(out);
  const Json& clients = report["clients"];
  ASSERT_EQ(clients.size(), 3u) << out;  // 1 client alone; 3 without and with batching
  EXPECT_EQ(clients[0]["clients"], 1);
  EXPECT_EQ(clients[2]["batching"], true);
  for (const auto& row : clients) {
    EXPECT_EQ(row["calls"].get<int>(), row["clients"].get<int>() * report["distinct_calls"].get<int>()) << row.dump();
    EXPECT_GT(row["calls_per_s"].get<double>(), 0) << row.dump();
  }
  EXPECT_GT(clients[2]["rows_per_pass"].get<double>(), 1.0) << clients[2].dump();
  EXPECT_LT(clients[2]["passes_per_call"].get<double>(), clients[1]["passes_per_call"].get<double>()) << out;
  EXPECT_NE(test::RunCommand(bench + " --clients 0 2>&1", &out), 0);
}

}  // namespace
}  // namespace fgemma
