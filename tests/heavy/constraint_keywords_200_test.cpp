// Issue 31 acceptance: 200 random catalogs mixing every keyword the grammar enforces, decoded by a
// random-weight model in every tool_choice mode: every value inside its declared bounds (the
// validator passes), and the same tokens with and without drafts and with and without batching.
#include "../runtime/constrained_support.h"

namespace fgemma {
namespace {
TEST(ConstraintKeywordsHeavy, TwoHundredKeywordCatalogsValidate) { test::RunRandomCatalogs(200, 3131, true); }
TEST(ConstraintKeywordsHeavy, DraftsChangeNothingOverTwoHundredKeywordCatalogs) {
  test::DraftComparison totals;
  test::CompareDrafts(200, 3131, &totals, true);
  EXPECT_GT(totals.accepted, 0u);
}
TEST(ConstraintKeywordsHeavy, BatchingChangesNothingOverTwoHundredKeywordCatalogs) { test::CompareBatched(200, 3131, true); }
}  // namespace
}  // namespace fgemma
