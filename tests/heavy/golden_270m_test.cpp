// The synthesized 270m (FunctionGemma's exact shape), crossing the 512-token sliding window.
#include "golden_sparse.h"

namespace fgemma {
namespace {

TEST(Golden270m, MatchesReference) {
  auto m = Model::Load(test::SynthModelDir("270m", 270, "bf16"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  test::CheckSparseGolden(std::shared_ptr<const Model>(std::move(m).value()), test::LoadGolden("270m-bf16.json"), 2e-3, 2);
}

}  // namespace
}  // namespace fgemma
