// `fgemma convert` on a checkpoint of FunctionGemma-270M's exact shape (SYNTH.md 270m, bf16, with
// FunctionGemma's tokenizer beside it): peak resident memory of the converting process and the sizes
// of the files, then a check that the q8_0 file predicts what llama.cpp predicts on its own q8_0 file
// of the same weights.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <regex>

#include "model/model.h"
#include "runtime/session.h"
#include "test_support.h"

namespace fgemma {
namespace {

namespace fs = std::filesystem;

// The synthesized 270m weights plus the real tokenizer files (symlinks), as a user's download has them.
std::string Model270mDir(const std::string& root) {
  const std::string synth = test::SynthModelDir("270m", 270, "bf16");
  const std::string mini = test::FixturePath("models/mini-bf16");
  const std::string dir = root + "/270m";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) fs::create_symlink(synth + "/" + f, dir + "/" + f);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::create_symlink(mini + "/" + f, dir + "/" + f);
  return dir;
}

struct Limits {
  const char* type;
  double max_mb;  // file size limit, MB = 10^6 bytes
};

TEST(Convert270m, PeakMemoryAndFileSizes) {
  // Outputs are hundreds of MB: removed however the test ends.
  struct ScratchDir {
    std::string path = test::TempDir();
    ~ScratchDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } scratch;
  const std::string& root = scratch.path;
  const std::string dir = Model270mDir(root);
  // q8_0 first: RUSAGE_CHILDREN's peak then belongs to that conversion alone.
  for (const Limits& c : {Limits{"q8_0", 292}, Limits{"q4_0", 160}, Limits{"bf16", 537}}) {
    const std::string out = root + "/270m-" + c.type + ".gguf";
    std::string output;
    const int rc = test::RunCommand(test::CliPath() + " convert --model " + dir + " --type " + c.type + " --out " + out + " 2>&1",
                                    &output);
    ASSERT_EQ(rc, 0) << output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(, ([0-9.]+) s, peak RSS ([0-9.]+) MB)"))) << output;
    const double seconds = std::stod(m[1]), rss_mb = std::stod(m[2]);
    const double size_mb = static_cast<double>(fs::file_size(out)) / 1e6;
    std::printf("270m %s: %.2f MB (%llu bytes), %.2f s, peak RSS %.1f MB\n", c.type, size_mb,
                static_cast<unsigned long long>(fs::file_size(out)), seconds, rss_mb);
    EXPECT_LE(size_mb, c.max_mb) << c.type;
    EXPECT_LT(rss_mb, 700) << c.type;
    if (std::string(c.type) == "q8_0") {  // kept for the logits check below
      struct rusage ru {};
      ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &ru), 0);
      const double child_mb = static_cast<double>(ru.ru_maxrss) * 1024 / 1e6;
      std::printf("270m q8_0: peak RSS of the child process (getrusage) %.1f MB\n", child_mb);
      EXPECT_LT(child_mb, 700);
    } else {
      fs::remove(out);
    }
  }

  // llama.cpp's argmax on its 270m q8_0 file (same weights, same quantizer) at the first positions
  // of the 270m golden sequence; ours on the converted file must agree nearly everywhere (llama.cpp
  // keeps an f16 KV cache, so a near-tie may flip).
  auto loaded = Model::Load(root + "/270m-q8_0.gguf");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto model = std::shared_ptr<const Model>(std::move(loaded).value());
  EXPECT_EQ(model->config().name, "270m");
  const Json golden = test::LoadGolden("270m-bf16.json");
  const Json peer = test::LoadGolden("peer-llamacpp-270m-q8_0.json");
  constexpr size_t kPositions = 96;
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < kPositions; ++i) tokens.push_back(golden["tokens"][i].get<int32_t>());
  SessionOptions o;
  o.context = kPositions;
  o.threads = 2;
  auto s = Session::Create(model, o).value();
  std::vector<HeadRequest> heads(kPositions);
  for (size_t i = 0; i < kPositions; ++i) heads[i].index = i;
  ASSERT_TRUE(s->Evaluate(tokens, heads).ok());
  size_t agree = 0;
  for (size_t i = 0; i < kPositions; ++i) agree += heads[i].argmax == peer["argmax"][i][0].get<int32_t>();
  std::printf("270m q8_0: argmax equals llama.cpp's at %zu/%zu positions\n", agree, kPositions);
  EXPECT_GE(agree, kPositions * 9 / 10);
}

}  // namespace
}  // namespace fgemma
