// The tied LM head, computed only for the positions and vocabulary rows that are asked for.
//
// Full-vocabulary requests stream the embedding once in blocks of rows spread over the threads,
// fusing argmax into the pass: no vocabulary-sized buffer exists unless the caller passes one
// for logits. Candidate requests (constrained decoding) compute only the listed rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/gemma3_forward.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace fgemma {

struct HeadRequest {
  size_t index = 0;                      // token index within the evaluated batch
  std::span<const int32_t> candidates;   // empty: whole vocabulary
  float* logits = nullptr;               // optional out: vocab_size (or candidates.size()) floats
  // Optional bitmap over the vocabulary (bit id%64 of word id/64): argmax considers only set ids.
  // Logits are still computed (and returned) for every row.
  const uint64_t* allowed_mask = nullptr;
  // Results:
  int32_t argmax = -1;                   // best token id (ties: lowest id, like torch.argmax)
  float max_logit = 0;
};

class LmHead {
 public:
  LmHead(const Model& model, int num_threads);
  // hidden[hidden_size] is the final-normed state of the requested position.
  void Compute(const float* hidden, HeadRequest& request, ThreadPool& pool);
  // Whole-vocabulary requests of several positions (a drafted pass's free-text heads) in one
  // pass over the embedding instead of one each: hidden[i] for requests[i], at most kMaxMany.
  // Each request gets the bits Compute gives it alone (the matrix kernels are batch-invariant).
  static constexpr size_t kMaxMany = 32;
  void ComputeMany(std::span<const float* const> hidden, std::span<HeadRequest* const> requests, ThreadPool& pool);

 private:
  const Model& model_;
  std::vector<float> block_scratch_;   // [threads, kBlockRows]
  std::vector<uint8_t> packed_;        // activation packing for an integer embedding
  struct Best {
    float value;
    int32_t id;
  };
  std::vector<Best> best_;             // [threads], padded by the struct size only
  // ComputeMany's: the positions' hidden rows side by side, their packing, per-thread logits
  // blocks [kMaxMany, kBlockRows] and bests [threads, kMaxMany].
  std::vector<float> many_hidden_;
  std::vector<uint8_t> many_packed_;
  std::vector<float> many_scratch_;
  std::vector<Best> many_best_;
};

}  // namespace fgemma
