// mini-bf16: the real 262,144-token vocabulary, against the reference's top-10, probes and greedy.
#include "golden_sparse.h"

namespace fgemma {
namespace {

TEST(MiniGolden, MatchesReference) {
  auto m = Model::Load(test::FixturePath("models/mini-bf16"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  test::CheckSparseGolden(std::shared_ptr<const Model>(std::move(m).value()), test::LoadGolden("mini-bf16.json"), 2e-3, 2);
}

}  // namespace
}  // namespace fgemma
