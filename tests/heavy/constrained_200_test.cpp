// Issue acceptance: 200 random catalogs and utterances, every tool_choice mode, 100% valid calls.
#include "../runtime/constrained_support.h"

namespace fgemma {
namespace {
TEST(ConstrainedDecodingHeavy, TwoHundredRandomCatalogs) { test::RunRandomCatalogs(200, 2026); }
}  // namespace
}  // namespace fgemma
