// GGUF files in llama.cpp's layout (mini bf16 / q8_0 / q4_0) against the float reference and against
// llama.cpp's own outputs on the same files.
#include <cmath>
#include <ostream>

#include "golden_sparse.h"

namespace fgemma {
namespace {

TEST(GgufGolden, Bf16MatchesFloatReference) {
  auto m = Model::Load(test::FixturePath("models/mini-bf16.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  test::CheckSparseGolden(std::shared_ptr<const Model>(std::move(m).value()), test::LoadGolden("mini-bf16.json"), 2e-3, 2);
}

TEST(GgufGolden, Bf16GgufIsBitIdenticalToTheSafetensorsDirectory) {
  auto a = std::shared_ptr<const Model>(Model::Load(test::FixturePath("models/mini-bf16.gguf")).value());
  auto b = std::shared_ptr<const Model>(Model::Load(test::FixturePath("models/mini-bf16")).value());
  const Json golden = test::LoadGolden("mini-bf16.json");
  std::vector<int32_t> tokens;
  for (auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
  std::vector<float> la(262144), lb(262144);
  for (auto [model, logits] : {std::pair{a, &la}, std::pair{b, &lb}}) {
    SessionOptions o;
    o.context = 128;
    o.threads = 2;
    auto s = Session::Create(model, o).value();
    HeadRequest h;
    h.index = tokens.size() - 1;
    h.logits = logits->data();
    ASSERT_TRUE(s->Evaluate(tokens, std::span<HeadRequest>(&h, 1)).ok());
  }
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * 4), 0);
}

struct QuantCase {
  const char* type;
  double bound;  // max |our logit - llama.cpp's| on the same file (it keeps its KV cache in f16)
};
void PrintTo(const QuantCase& c, std::ostream* os) { *os << c.type; }

class GgufQuantized : public ::testing::TestWithParam<QuantCase> {};

// Logits at every position of the mini token sequence, sampled at ids 0, 4096, ... (as the llama.cpp
// goldens are), plus the full-row argmax and (with_margin) the top-1 margin.
struct Scored {
  std::vector<std::vector<float>> rows;
  std::vector<int32_t> argmax;
  std::vector<float> top1, margin;
};

// The positions are evaluated kChunk at a time with a head at each (one pass over the 262,144-row
// embedding for all of them): the same bits as one token at a time (the kernels are
// batch-invariant, BatchedForward tests it), at a fraction of the cost under qemu.
Scored ScoreAll(const std::string& path, const std::vector<int32_t>& tokens, bool with_margin) {
  constexpr size_t kChunk = 20, kVocab = 262144;
  auto model = std::shared_ptr<const Model>(Model::Load(path).value());
  SessionOptions o;
  o.context = 128;
  o.threads = 2;
  auto s = Session::Create(model, o).value();
  Scored out;
  std::vector<float> logits(kChunk * kVocab);
  for (size_t begin = 0; begin < tokens.size(); begin += kChunk) {
    const size_t n = std::min(kChunk, tokens.size() - begin);
    std::vector<HeadRequest> heads(n);
    for (size_t i = 0; i < n; ++i) {
      heads[i].index = i;
      heads[i].logits = logits.data() + i * kVocab;
    }
    EXPECT_TRUE(s->Evaluate(std::span<const int32_t>(tokens).subspan(begin, n), heads).ok());
    for (size_t i = 0; i < n; ++i) {
      const float* row_logits = heads[i].logits;
      std::vector<float> row;
      for (size_t id = 0; id < kVocab; id += 4096) row.push_back(row_logits[id]);
      out.rows.push_back(row);
      out.argmax.push_back(heads[i].argmax);
      out.top1.push_back(heads[i].max_logit);
      if (!with_margin) continue;
      float second = -INFINITY;
      for (size_t id = 0; id < kVocab; ++id) {
        if (static_cast<int32_t>(id) != heads[i].argmax) second = std::max(second, row_logits[id]);
      }
      out.margin.push_back(heads[i].max_logit - second);
    }
  }
  return out;
}

// The float model's scores, computed once for every quantized type.
const Scored& FloatReference(const std::vector<int32_t>& tokens) {
  static const Scored ref = ScoreAll(test::FixturePath("models/mini-bf16"), tokens, false);
  return ref;
}

TEST_P(GgufQuantized, WithinQuantizationErrorAndAgreesWithLlamaCpp) {
  const QuantCase& c = GetParam();
  const Json golden = test::LoadGolden("mini-bf16.json");
  const Json peer = test::LoadGolden(std::string("peer-llamacpp-mini-") + c.type + ".json");
  std::vector<int32_t> tokens;
  for (auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
  const Scored& ref = FloatReference(tokens);
  const Scored q = ScoreAll(test::FixturePath(std::string("models/mini-") + c.type + ".gguf"), tokens, true);

  // The quantization error of these files is what llama.cpp's outputs on them show against the
  // float reference; ours must stay within it (with 25% slack), and close to llama.cpp's own logits.
  double ours_vs_ref = 0, peer_vs_ref = 0, ours_vs_peer = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    const auto& peer_row = peer["rows"][std::to_string(p)];
    for (size_t i = 0; i < q.rows[p].size(); ++i) {
      ours_vs_ref = std::max(ours_vs_ref, static_cast<double>(std::abs(q.rows[p][i] - ref.rows[p][i])));
      peer_vs_ref = std::max(peer_vs_ref, std::abs(peer_row[i].get<double>() - ref.rows[p][i]));
      ours_vs_peer = std::max(ours_vs_peer, std::abs(q.rows[p][i] - peer_row[i].get<double>()));
    }
  }
  EXPECT_LE(ours_vs_ref, 1.25 * peer_vs_ref + 0.01) << "quantization error beyond llama.cpp's on the same file";
  EXPECT_LT(ours_vs_peer, c.bound) << "max |ours - llama.cpp| over sampled logits";
  // Where our top-1 margin exceeds twice that bound, llama.cpp cannot have picked another token.
  size_t checked = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    if (q.margin[p] <= 2 * c.bound) continue;
    ++checked;
    EXPECT_EQ(q.argmax[p], peer["argmax"][p][0].get<int32_t>()) << "position " << p << " margin " << q.margin[p];
  }
  EXPECT_GE(checked, 4u);
  size_t agree_all = 0;
  for (size_t p = 0; p < tokens.size(); ++p) agree_all += q.argmax[p] == peer["argmax"][p][0].get<int32_t>();
  std::printf("[%s] max |ours - float ref| = %.4f (llama.cpp: %.4f), max |ours - llama.cpp| = %.4f, "
              "argmax equal at all %zu/%zu positions with margin > %.2f\n",
              c.type, ours_vs_ref, peer_vs_ref, ours_vs_peer, checked, tokens.size(), 2 * c.bound);
}

INSTANTIATE_TEST_SUITE_P(Types, GgufQuantized, ::testing::Values(QuantCase{"q8_0", 0.25}, QuantCase{"q4_0", 0.25}),
                         [](const auto& info) { return std::string(info.param.type); });

}  // namespace
}  // namespace fgemma
