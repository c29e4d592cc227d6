// The sizes `fgemma serve` chooses when --threads, --sessions or --context are left at 0.
#include "server/serve_shape.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/config.h"
#include "model/kv_cache.h"

namespace fgemma::server {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

ModelConfig Config270m() {
  auto c = ConfigByName("270m");
  EXPECT_TRUE(c.ok());
  return c.value();
}

TEST(ServeShape, KvBytesAreWhatTheCacheAllocates) {
  const ModelConfig c = Config270m();
  for (size_t context : {1, 100, 512, 513, 4096}) {
    auto cache = KvCache::Create(c, context);
    ASSERT_TRUE(cache.ok());
    // bytes() reports keys and values; BytesFor adds the sliding layers' undo rows.
    const uint64_t undo = 2 * KvCache::kMaxUndoRows * static_cast<uint64_t>(c.kv_dim()) * sizeof(float) *
                          static_cast<uint64_t>(std::count(c.layer_kinds.begin(), c.layer_kinds.end(), LayerKind::kSliding));
    EXPECT_EQ(KvCache::BytesFor(c, context),
              cache.value().bytes(LayerKind::kSliding) + cache.value().bytes(LayerKind::kGlobal) + undo)
        << context;
  }
}

TEST(ServeShape, AMachineWithMemoryGetsEightSessionsOnItsCores) {
  const ServeShape s = ResolveServeShape(0, 0, 0, Config270m(), {2, 20000 * kMiB});
  EXPECT_EQ(s.threads, 2);
  EXPECT_EQ(s.context, kAutoContext);
  EXPECT_EQ(s.sessions, kAutoMaxSessions);
  EXPECT_NE(s.basis.find("2 cores"), std::string::npos) << s.basis;
}

TEST(ServeShape, SessionsAreWhatFitsInHalfTheAvailableMemory) {
  const ModelConfig c = Config270m();
  const uint64_t session = KvCache::BytesFor(c, kAutoContext) + kSessionOverheadBytes;
  // Room for exactly 3 sessions in half of it, and for 3 and a bit.
  for (uint64_t available : {6 * session, 7 * session - 1}) {
    const ServeShape s = ResolveServeShape(0, 0, 0, c, {4, available});
    EXPECT_EQ(s.sessions, 3u) << available;
    EXPECT_EQ(s.context, kAutoContext);
    EXPECT_EQ(s.session_bytes, session);
  }
}

TEST(ServeShape, ShortMemoryShrinksTheContextThenKeepsOneSession) {
  const ModelConfig c = Config270m();
  const uint64_t at1024 = KvCache::BytesFor(c, 1024) + kSessionOverheadBytes;
  ServeShape s = ResolveServeShape(0, 0, 0, c, {1, 2 * at1024});
  EXPECT_EQ(s.context, 1024u);
  EXPECT_EQ(s.sessions, 1u);
  s = ResolveServeShape(0, 0, 0, c, {1, 1 * kMiB});  // nothing fits: the smallest context, one session
  EXPECT_EQ(s.context, kAutoMinContext);
  EXPECT_EQ(s.sessions, 1u);
}

TEST(ServeShape, GivenValuesAreKeptAndUnknownMemoryGivesTwoSessions) {
  const ModelConfig c = Config270m();
  ServeShape s = ResolveServeShape(3, 5, 777, c, {64, 1 * kMiB});
  EXPECT_EQ(s.threads, 3);
  EXPECT_EQ(s.sessions, 5u);
  EXPECT_EQ(s.context, 777u);
  EXPECT_TRUE(s.basis.empty()) << s.basis;
  s = ResolveServeShape(1, 0, 0, c, {8, 0});
  EXPECT_EQ(s.sessions, 2u);
  EXPECT_EQ(s.context, kAutoContext);
}

TEST(ServeShape, TheMachineIsRead) {
  const MachineFacts f = ReadMachineFacts();
  EXPECT_GE(f.cores, 1);
  EXPECT_GT(f.available_bytes, 0u);  // Linux: /proc/meminfo
}

}  // namespace
}  // namespace fgemma::server
