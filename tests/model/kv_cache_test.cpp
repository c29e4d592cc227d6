// KvCache: the rows a query attends to are exactly the positions of its causal window, in order,
// on both layer kinds, through ring wrap-around and chunks longer than the window; state for
// positions [0, n) survives export/import and copies between caches of other contexts.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/kv_cache.h"

namespace fgemma {
namespace {

constexpr size_t kWindow = 4, kKvHeads = 2, kHeadDim = 3, kKvDim = kKvHeads * kHeadDim;

ModelConfig SmallConfig() {
  ModelConfig c;
  c.num_layers = 2;
  c.layer_kinds = {LayerKind::kSliding, LayerKind::kGlobal};
  c.sliding_window = static_cast<int>(kWindow);
  c.num_heads = 4;
  c.num_kv_heads = static_cast<int>(kKvHeads);
  c.head_dim = static_cast<int>(kHeadDim);
  c.max_position_embeddings = 64;
  return c;
}

// Key element c of position p on layer l (values are its negation): identifies row and column.
float KeyOf(int layer, size_t pos, size_t c) { return static_cast<float>(layer * 10000 + static_cast<int>(pos * 10 + c)); }

// Chunk rows k, v [n, kKvDim] for positions [start, start + n).
void MakeChunk(int layer, size_t start, size_t n, std::vector<float>* k, std::vector<float>* v) {
  k->assign(n * kKvDim, 0);
  v->assign(n * kKvDim, 0);
  for (size_t t = 0; t < n; ++t)
    for (size_t c = 0; c < kKvDim; ++c) {
      (*k)[t * kKvDim + c] = KeyOf(layer, start + t, c);
      (*v)[t * kKvDim + c] = -KeyOf(layer, start + t, c);
    }
}

// Runs the chunk through `cache` the way the forward pass does (global layers commit before
// attending, sliding ones after) and checks what every query of the chunk sees.
void RunChunk(KvCache& cache, size_t start, size_t n, size_t* max_runs) {
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<float> k, v;
    MakeChunk(layer, start, n, &k, &v);
    const bool global = cache.kind(layer) == LayerKind::kGlobal;
    if (global) cache.Commit(layer, start, n, k.data(), v.data());
    for (size_t pos = start; pos < start + n; ++pos) {
      const size_t lo = !global && pos + 1 > kWindow ? pos + 1 - kWindow : 0;
      for (size_t kvh = 0; kvh < kKvHeads; ++kvh) {
        SCOPED_TRACE("layer " + std::to_string(layer) + " pos " + std::to_string(pos) + " kv head " + std::to_string(kvh));
        const KvCache::Visible seen = cache.VisibleTo(layer, pos, start, k.data(), v.data(), kvh);
        ASSERT_EQ(seen.count, pos + 1 - lo);
        ASSERT_LE(seen.runs, 3u);
        *max_runs = std::max(*max_runs, seen.runs);
        size_t p = lo;
        for (size_t r = 0; r < seen.runs; ++r) {
          ASSERT_GT(seen.keys[r].count, 0u);
          ASSERT_EQ(seen.keys[r].count, seen.values[r].count);
          for (size_t j = 0; j < seen.keys[r].count; ++j, ++p) {
            for (size_t d = 0; d < kHeadDim; ++d) {
              ASSERT_EQ(seen.keys[r].rows[j * kKvDim + d], KeyOf(layer, p, kvh * kHeadDim + d));
              ASSERT_EQ(seen.values[r].rows[j * kKvDim + d], -KeyOf(layer, p, kvh * kHeadDim + d));
            }
          }
        }
        ASSERT_EQ(p, pos + 1);
      }
    }
    if (!global) cache.Commit(layer, start, n, k.data(), v.data());
  }
}

// KV layers and forward buffers start on a cache line: with kv_dim a multiple of 16 floats no 64-byte
// vector load of a row straddles two.
TEST(FloatBuffer, StartsOnACacheLine) {
  for (size_t n : {size_t{1}, size_t{255}, size_t{4096}, size_t{1} << 22}) {
    FloatBuffer b(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % FloatBuffer::kAlignment, 0u) << n;
    b.data()[n - 1] = 1.0f;
  }
}

TEST(KvCache, QueriesSeeTheirWindowThroughRingWrapAround) {
  auto cache = KvCache::Create(SmallConfig(), 32);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  size_t max_runs = 0, start = 0;
  // Single steps, short chunks, a chunk straddling the ring's end, chunks longer than the window.
  for (size_t n : {1u, 2u, 3u, 1u, 5u, 2u, 6u, 1u, 1u, 9u}) {
    RunChunk(*cache, start, n, &max_runs);
    if (HasFatalFailure()) return;
    start += n;
  }
  EXPECT_EQ(max_runs, 3u);  // ring wrapped plus the chunk's own rows
  EXPECT_EQ(cache->bytes(LayerKind::kSliding), 2 * kWindow * kKvDim * sizeof(float));
  EXPECT_EQ(cache->bytes(LayerKind::kGlobal), 2 * 32 * kKvDim * sizeof(float));
}

// RollBack: a copy of a base state, extended, comes back to a position after the base by getting
// back from the base the ring rows later positions overwrote, also those a position past the
// stated one wrote (a speculative batch not taken back); the next chunk sees exactly its window.
// A ring wrapped since the copy cannot be rolled back, and nothing changes.
TEST(KvCache, RollBackRepairsTheRingFromTheBase) {
  const ModelConfig config = SmallConfig();
  auto base = KvCache::Create(config, 32).value();
  size_t max_runs = 0;
  RunChunk(base, 0, 10, &max_runs);  // the ring (4 rows) has wrapped
  ASSERT_FALSE(HasFatalFailure());
  for (size_t to : {10u, 11u, 12u}) {
    auto work = KvCache::Create(config, 32).value();
    work.CopyFrom(base, 10);
    RunChunk(work, 10, 3, &max_runs);  // positions 10-12 replace the rows of 6-8
    ASSERT_FALSE(HasFatalFailure());
    // Stated as 12 positions: position 12's row was written past it and is repaired too.
    ASSERT_TRUE(work.RollBack(12, to, base, 10)) << to;
    RunChunk(work, to, 4, &max_runs);
    ASSERT_FALSE(HasFatalFailure()) << "rolled back to " << to;
  }
  auto wrapped = KvCache::Create(config, 32).value();
  wrapped.CopyFrom(base, 10);
  RunChunk(wrapped, 10, 5, &max_runs);  // 5 positions past the copy: the 4-row ring wrapped
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_FALSE(wrapped.RollBack(15, 12, base, 10));
  EXPECT_FALSE(wrapped.RollBack(12, 9, base, 10));  // before the base
  RunChunk(wrapped, 15, 2, &max_runs);  // unchanged: the ring still serves position 15 on
  ASSERT_FALSE(HasFatalFailure());
}

TEST(KvCache, StateRoundTripsThroughExportImportAndCopy) {
  const ModelConfig config = SmallConfig();
  auto a = KvCache::Create(config, 32).value();
  size_t max_runs = 0, start = 0;
  for (size_t n : {3u, 4u, 4u}) {  // 11 positions: the ring has wrapped
    RunChunk(a, start, n, &max_runs);
    start += n;
  }
  ASSERT_FALSE(HasFatalFailure());
  const size_t n = start;
  // min(n, rows) rows per layer, keys and values.
  EXPECT_EQ(a.StateBytes(n), 2 * (kWindow + n) * kKvDim * sizeof(float));
  std::string state = "prefix";
  a.Export(n, &state);
  ASSERT_EQ(state.size(), 6 + a.StateBytes(n));
  const auto* bytes = reinterpret_cast<const uint8_t*>(state.data()) + 6;

  auto b = KvCache::Create(config, 32).value();
  ASSERT_TRUE(b.Import(n, bytes, state.size() - 6).ok());
  std::string again;
  b.Export(n, &again);
  EXPECT_EQ(again, state.substr(6));
  // Imported state serves the next chunk exactly like the original.
  RunChunk(b, n, 5, &max_runs);
  ASSERT_FALSE(HasFatalFailure());

  // A copy into a cache of another context holds the same rows.
  auto c = KvCache::Create(config, 16).value();
  c.CopyFrom(a, n);
  std::string copied;
  c.Export(n, &copied);
  EXPECT_EQ(copied, state.substr(6));
  RunChunk(c, n, 5, &max_runs);
  ASSERT_FALSE(HasFatalFailure());

  // Wrong sizes and positions beyond the context are refused and change nothing.
  EXPECT_EQ(b.Import(n, bytes, state.size() - 7).code(), ErrorCode::kCorruptFile);
  EXPECT_EQ(c.Import(17, bytes, state.size() - 6).code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(c.Zero(17).code(), ErrorCode::kOutOfRange);
  // Zero clears exactly the state's rows.
  ASSERT_TRUE(a.Zero(n).ok());
  std::string zeros;
  a.Export(n, &zeros);
  EXPECT_EQ(zeros, std::string(a.StateBytes(n), '\0'));
}

}  // namespace
}  // namespace fgemma
