// `fgemma tokenize` / `fgemma detokenize` end to end.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_support.h"
#include "tokenizer/tokenizer_fixture.h"
#include "util/mapped_file.h"

namespace fgemma::test {
namespace {

std::string MiniModelDir() { return FixturePath("models/mini-bf16"); }  // not `Model`: a type in this unity batch

// Exit code of `fgemma ARGS`; *out receives its output (RunCommand appends, so it is cleared first).
int Cli(const std::string& args, std::string* out) {
  out->clear();
  return RunCommand(CliPath() + " " + args, out);
}

TEST(TokenizerCli, TokenizePrintsIds) {
  std::string out;
  ASSERT_EQ(Cli("tokenize --model " + MiniModelDir() + " --bos 'Hello world<end_of_turn>'", &out), 0);
  EXPECT_EQ(out, "[2,9259,1902,106]\n");
  ASSERT_EQ(Cli("tokenize --model " + MiniModelDir() + "/tokenizer.json --no-special '<escape>'", &out), 0);
  EXPECT_EQ(out.find("52"), std::string::npos) << out;
}

TEST(TokenizerCli, JsonlInOrder) {
  const std::string dir = TempDir();
  const auto& rows = GoldenRows();
  std::string input, expected;
  for (size_t i = 0; i < 50; ++i) {
    input += Json(rows[i].text).dump() + "\n";
    expected += Json(rows[i].ids).dump() + "\n";
  }
  ASSERT_TRUE(WriteStringToFile(dir + "/in.jsonl", input).ok());
  std::string out;
  ASSERT_EQ(Cli("tokenize --model " + MiniModelDir() + " --jsonl " + dir + "/in.jsonl", &out), 0);
  EXPECT_EQ(out, expected);
  ASSERT_TRUE(WriteStringToFile(dir + "/bad.jsonl", "\"ok\"\n42\n").ok());
  EXPECT_EQ(Cli("tokenize --model " + MiniModelDir() + " --jsonl " + dir + "/bad.jsonl 2>&1", &out), 1);
  EXPECT_NE(out.find("bad.jsonl:2: expected a JSON string"), std::string::npos) << out;
  EXPECT_EQ(Cli("tokenize --model " + MiniModelDir() + " --jsonl " + dir + " 2>&1", &out), 1);
  EXPECT_NE(out.find(dir + ": is a directory"), std::string::npos) << out;
  // A pipe streams like standard input.
  const std::string fifo = dir + "/lines.fifo";
  out.clear();
  ASSERT_EQ(RunCommand("rm -f " + fifo + " && mkfifo " + fifo + " && (head -3 " + dir + "/in.jsonl > " + fifo + " &) && " +
                           CliPath() + " tokenize --model " + MiniModelDir() + " --jsonl " + fifo,
                       &out),
            0);
  EXPECT_EQ(out, expected.substr(0, out.size()));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
}

TEST(TokenizerCli, DetokenizeAndErrors) {
  std::string out;
  ASSERT_EQ(Cli("detokenize --model " + MiniModelDir() + " 2 9259 1902 106", &out), 0);
  EXPECT_EQ(out, "<bos>Hello world<end_of_turn>\n");
  ASSERT_EQ(Cli("detokenize --model " + MiniModelDir() + " --skip-special '[2, 9259, 1902, 106]'", &out), 0);
  EXPECT_EQ(out, "Hello world\n");
  EXPECT_EQ(Cli("detokenize --model " + MiniModelDir() + " 5 262144 2>&1", &out), 1);
  EXPECT_NE(out.find("token id 262144 at position 1"), std::string::npos) << out;
  EXPECT_EQ(Cli("detokenize --model " + MiniModelDir() + " 5x 2>&1", &out), 1);
  EXPECT_NE(out.find("not a token id: '5x'"), std::string::npos) << out;
  EXPECT_EQ(Cli("tokenize --model /nonexistent hi 2>&1", &out), 1);
  EXPECT_NE(out.find("/nonexistent"), std::string::npos) << out;
}

}  // namespace
}  // namespace fgemma::test
