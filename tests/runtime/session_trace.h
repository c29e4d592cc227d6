// Driving a Session through a prefill and greedy decode steps and recording what each step
// produced, to compare sessions bit for bit (shared pools, pass batching).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/session.h"
#include "util/hash.h"

namespace fgemma::test {

struct Trace {
  std::vector<int32_t> argmax;   // per step
  std::vector<uint64_t> logits;  // hash of each step's logits (the whole row, or the candidates')
  bool operator==(const Trace&) const = default;
};

// Evaluates `prompt` (in the session's chunks), then decodes `steps` greedy tokens, recording every
// step's argmax and logits. With `candidates`, every second decode step restricts its head to them
// (as constrained decoding does); the others use the whole vocabulary.
inline Trace Drive(Session& s, const std::vector<int32_t>& prompt, size_t steps,
                   std::span<const int32_t> candidates = {}) {
  const size_t vocab = static_cast<size_t>(s.model().config().vocab_size);
  std::vector<float> logits(vocab);
  Trace trace;
  HeadRequest head;
  head.index = prompt.size() - 1;
  head.logits = logits.data();
  Status st = s.Evaluate(prompt, std::span<HeadRequest>(&head, 1));
  for (size_t i = 0; st.ok() && i <= steps; ++i) {
    trace.argmax.push_back(head.argmax);
    const size_t n = head.candidates.empty() ? vocab : head.candidates.size();
    trace.logits.push_back(Hash64(logits.data(), n * sizeof(float)));
    const int32_t next = head.argmax;
    head = HeadRequest{};
    head.logits = logits.data();
    if (i % 2 == 0) head.candidates = candidates;
    if (i < steps) st = s.Evaluate(std::span<const int32_t>(&next, 1), std::span<HeadRequest>(&head, 1));
  }
  EXPECT_TRUE(st.ok()) << st.ToString();
  return trace;
}

// A deterministic prompt of n ids in [1000, 201000), different per seed.
inline std::vector<int32_t> Prompt(size_t n, int32_t seed) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(1000 + (seed * 7919 + 37 * static_cast<int32_t>(i)) % 200000);
  return ids;
}

}  // namespace fgemma::test
