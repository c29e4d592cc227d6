// The shared table of GGUF keys: names are unique, a key a reader requires has no default, and
// ReadGgufKey / AddGgufKey round-trip through a file with the table's types and defaults.
#include "io/gguf_keys.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "io/gguf_writer.h"
#include "test_support.h"

namespace fgemma {
namespace {

namespace k = gguf_key;

TEST(GgufKeys, NamesAreUniqueAndRequiredKeysHaveNoDefault) {
  std::set<std::string_view> names;
  for (const GgufKey* key : k::kAll) {
    EXPECT_TRUE(names.insert(key->name).second) << key->name;
    if (key->required) {
      EXPECT_EQ(key->default_number, 0) << key->name;
      EXPECT_TRUE(key->default_text.empty() && key->default_key.empty()) << key->name;
    }
  }
}

TEST(GgufKeys, ReadsWhatTheWriterAddsAndDefaultsWhatIsAbsent) {
  const std::string path = test::TempDir() + "/keys.gguf";
  {
    auto w = GgufWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE(AddGgufKey(*w, k::kArchitecture, "gemma3").ok());
    ASSERT_TRUE(AddGgufKey(*w, k::kContextLength, uint32_t{1024}).ok());
    ASSERT_TRUE(AddGgufKey(*w, k::kRopeFreqBase, 5e5f).ok());
    // A value of another type than the table's is refused, naming the key.
    const Status wrong = AddGgufKey(*w, k::kBlockCount, 3.0f);
    EXPECT_EQ(wrong.code(), ErrorCode::kInternal);
    EXPECT_NE(wrong.message().find(k::kBlockCount.name), std::string::npos) << wrong.ToString();
    ASSERT_TRUE(w->Finish().ok());
  }
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::string arch;
  ASSERT_TRUE(ReadGgufKey(*f, k::kArchitecture, &arch).ok());
  EXPECT_EQ(arch, "gemma3");
  uint32_t context = 0;
  ASSERT_TRUE(ReadGgufKey(*f, k::kContextLength, &context).ok());
  EXPECT_EQ(context, 1024u);
  float base = 0, swa = 0;
  ASSERT_TRUE(ReadGgufKey(*f, k::kRopeFreqBase, &base).ok());
  EXPECT_EQ(base, 5e5f);
  ASSERT_TRUE(ReadGgufKey(*f, k::kRopeFreqBaseSwa, &swa).ok());  // absent: the table's default
  EXPECT_EQ(swa, 1e4f);
  std::string scaling;
  ASSERT_TRUE(ReadGgufKey(*f, k::kRopeScalingType, &scaling).ok());
  EXPECT_EQ(scaling, "none");
  float query = 7;  // defaults to another key's value: left as the caller set it
  ASSERT_TRUE(ReadGgufKey(*f, k::kQueryPreAttnScalar, &query).ok());
  EXPECT_EQ(query, 7.0f);
  uint32_t layers = 0;  // required and absent
  const Status missing = ReadGgufKey(*f, k::kBlockCount, &layers);
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.message().find(k::kBlockCount.name), std::string::npos) << missing.ToString();
}

}  // namespace
}  // namespace fgemma
