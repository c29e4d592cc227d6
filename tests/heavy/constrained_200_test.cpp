// Issue acceptance: 200 random catalogs and utterances, every tool_choice mode, 100% valid calls.
#include "../runtime/constrained_support.h"

namespace fgemma {
namespace {
TEST(ConstrainedDecodingHeavy, TwoHundredRandomCatalogs) { test::RunRandomCatalogs(200, 2026); }
}  // namespace
}  // namespace fgemma

namespace fgemma {
namespace {
// Issue 14: over the same 200 catalogs, drafts change no token (and save passes).
TEST(ConstrainedDecodingHeavy, DraftsChangeNothingOverTwoHundredCatalogs) {
  test::DraftComparison totals;
  test::CompareDrafts(200, 2026, &totals);
  EXPECT_GT(totals.accepted, 0u);
  EXPECT_LT(totals.passes, totals.tokens);
}
}  // namespace
}  // namespace fgemma
