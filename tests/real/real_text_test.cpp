// The real model speaks: the test text's ids come out of fgemma's tokenizer (FunctionGemma's
// tokenizer.json shares Gemma 3's ids), and `fgemma generate` continues plain English with the
// sensible answers llama.cpp's greedy continuation gives on the same files (Q4_K_M, Q8_0: " Paris").
// A chat turn runs through the template and prints text; this base model does not chat (it repeats
// the question, as llama.cpp does on the same prompt), so only that it speaks is checked.
#include <gtest/gtest.h>


#include "real_files.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

TEST(RealData, FunctionGemmaTokenizerGivesTheGoldensIds) {
  auto tokenizer = Tokenizer::FromFile(std::string(FGEMMA_SOURCE_DIR) + "/assets/functiongemma/tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  auto text = ReadFileToString(test::RealDataPath("english.txt"));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(tokenizer->Encode(*text, EncodeOptions{.add_bos = true, .parse_special = false}), test::RealTextIds());
}

// The first file of the manifest fgemma loads here (the fetched Q4_K_M once its types are
// supported, else a file made from it), or "" with the reason.
std::string FirstLoadableRealFile(std::string* why) {
  *why = "no real model file in " + test::RealCacheDir() + "; run scripts/fetch-real-model.sh";
  for (const auto& f : test::RealFiles()) {
    const std::string path = test::RealCacheDir() + "/" + f.file;
    if (!FileExists(path)) continue;
    std::string out;
    // `fgemma generate` names an unsupported type; a file it loads answers one token.
    if (test::RunCommand(test::CliPath() + " generate --model " + path + " --prompt x --max-new 1 --threads 2 2>&1", &out) == 0)
      return path;
    *why = f.type + ": " + out;
  }
  return "";
}

TEST(RealModel, ContinuesPlainEnglishAndAnswersAChatTurn) {
  std::string why;
  const std::string path = FirstLoadableRealFile(&why);
  if (path.empty()) GTEST_SKIP() << why;
  for (const char* prompt : {"The Eiffel Tower is located in the city of", "Question: What is the capital of France?\nAnswer:"}) {
    std::string out;
    ASSERT_EQ(test::RunCommand(test::CliPath() + " generate --model " + path + " --prompt \"$(printf '" + prompt +
                                   "')\" --max-new 4 --threads 2 2>&1",
                               &out),
              0)
        << out;
    EXPECT_EQ(out.rfind(" Paris", 0), 0u) << prompt << " ->" << out;
  }
  std::string out;
  ASSERT_EQ(test::RunCommand(test::CliPath() + " generate --model " + path +
                                 " --chat --prompt 'What is the capital of France?' --max-new 8 --threads 2 2>&1",
                             &out),
            0)
      << out;
  EXPECT_GT(out.size(), 8u) << out;
}

// `fgemma demo` takes the real model from the cache when one loads, and says so.
TEST(RealModel, DemoUsesTheRealModelFromTheCache) {
  std::string why;
  if (FirstLoadableRealFile(&why).empty()) GTEST_SKIP() << why;
  std::string out;
  ASSERT_EQ(test::RunDemoOnTheRealCache(&out), 0) << out;
  EXPECT_NE(out.find("(real Gemma 3 270M, kernels "), std::string::npos) << out;
  EXPECT_EQ(out.find("synthesizing"), std::string::npos) << out;
  EXPECT_NE(out.find("\"name\":\""), std::string::npos) << out;  // a call (Q8_0 here: set_lights)
}

}  // namespace
}  // namespace fgemma
