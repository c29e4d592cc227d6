// SYNTH.md: check values, and byte identity with every shipped checkpoint.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>

#include "io/safetensors.h"
#include "model/synth.h"
#include "model/tensor_list.h"
#include "test_support.h"

namespace fgemma {
namespace {

TEST(Synth, CheckValues) {
  EXPECT_EQ(Fnv1a64("model.norm.weight"), 0xd6d6e5afd11604e4ull);
  const uint64_t h = Fnv1a64("model.norm.weight");
  const float expected[4] = {-0.14862537f, 0.35448742f, 0.3702739f, -0.33317387f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(SynthValue(h, 1, static_cast<uint64_t>(i), 0.5), expected[i]);
}

TEST(Synth, ParameterCountOf270mMatchesFunctionGemma) {
  EXPECT_EQ(ConfigByName("270m").value().ParameterCount(), 268098176ull);
}

struct Shipped {
  const char* dir;
  const char* config;
  uint64_t seed;
  const char* dtype;
};
void PrintTo(const Shipped& s, std::ostream* os) { *os << s.dir; }

class SynthMatchesShipped : public ::testing::TestWithParam<Shipped> {};

TEST_P(SynthMatchesShipped, TensorsAreByteIdentical) {
  const Shipped& p = GetParam();
  const std::string out = test::TempDir() + "/model";
  ASSERT_TRUE(WriteSynthCheckpoint(ConfigByName(p.config).value(), p.seed, DTypeFromName(p.dtype).value(), out).ok());
  auto ours = SafetensorsCheckpoint::Open(out);
  auto shipped = SafetensorsCheckpoint::Open(test::FixturePath(std::string("models/") + p.dir));
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
  ASSERT_EQ(ours.value()->tensors().size(), shipped.value()->tensors().size());
  for (const auto& [name, t] : shipped.value()->tensors()) {
    const SafetensorsTensor* o = ours.value()->Find(name);
    ASSERT_NE(o, nullptr) << name;
    EXPECT_EQ(o->dtype, t.dtype) << name;
    EXPECT_EQ(o->shape, t.shape) << name;
    ASSERT_EQ(o->bytes, t.bytes) << name;
    EXPECT_EQ(std::memcmp(o->data, t.data, t.bytes), 0) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SynthMatchesShipped,
                         ::testing::Values(Shipped{"tiny-mqa-f32", "tiny-mqa", 1, "f32"},
                                           Shipped{"tiny-mqa-bf16", "tiny-mqa", 1, "bf16"},
                                           Shipped{"tiny-gqa-f32", "tiny-gqa", 2, "f32"},
                                           Shipped{"tiny-gqa-bf16", "tiny-gqa", 2, "bf16"},
                                           Shipped{"mini-bf16", "mini", 3, "bf16"}),
                         [](const auto& info) {
                           std::string n = info.param.dir;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace fgemma
