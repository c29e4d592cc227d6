// `fgemma demo` end to end: the first run makes the q8_0 model once (in a fresh private directory,
// never at a fixed temporary name), the second reuses it; both print the call, the passes over the
// weights and the speed-ups used.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

namespace fs = std::filesystem;

TEST(Demo, MakesTheQ8ModelOnceSafelyAndReportsPasses) {
  const std::string tmp = test::TempDir();  // (made anew by each call)
  const std::string cache = tmp + "/demo-cache";
  fs::create_directories(cache);
  // A link planted at the name an earlier demo wrote through must be left alone (not followed).
  const std::string victim = tmp + "/demo-victim";
  fs::create_directories(victim);
  fs::create_directory_symlink(victim, cache + "/synth-270m-bf16.tmp");
  const std::string demo = "FGEMMA_CACHE_DIR=" + cache + " " + test::CliPath() + " demo --threads 2 2>&1";
  std::string out;
  ASSERT_EQ(test::RunCommand(demo, &out), 0) << out;
  EXPECT_NE(out.find("synthesizing"), std::string::npos) << out;
  EXPECT_NE(out.find("(q8_0, kernels "), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("total [0-9]+ ms, [0-9]+ passes over the weights"))) << out;
  EXPECT_NE(out.find("catalog prefix restored, not recomputed"), std::string::npos) << out;
  EXPECT_TRUE(fs::is_empty(victim));
  EXPECT_TRUE(fs::is_symlink(cache + "/synth-270m-bf16.tmp"));
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(cache)) {
    ++entries;
    EXPECT_EQ(e.path().filename().string().find("synth-270m-bf16."), e.path().filename() == "synth-270m-bf16.tmp" ? 0u : std::string::npos)
        << "scratch directory left behind: " << e.path();
  }
  EXPECT_EQ(entries, 3u);  // the model, the catalog cache, the planted link
  out.clear();
  ASSERT_EQ(test::RunCommand(demo, &out), 0) << out;
  EXPECT_EQ(out.find("synthesizing"), std::string::npos) << "the model is made once: " << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("request 1: \"[^\"]+\" \\(catalog prefix: file"))) << out;
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace fgemma
