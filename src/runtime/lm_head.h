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
  // `max_tokens`: the most full-vocabulary requests ComputeFull takes at once.
  LmHead(const Model& model, int num_threads, size_t max_tokens = 1);
  // hidden[hidden_size] is the final-normed state of the requested position.
  void Compute(const float* hidden, HeadRequest& request, ThreadPool& pool);
  // Full-vocabulary requests of several positions (of one or several sequences) in one read of the
  // embedding: requests[t] (no candidates, at most max_tokens of them) for hidden[t]. Each gets the
  // bits Compute gives it alone.
  void ComputeFull(std::span<const float* const> hidden, std::span<HeadRequest* const> requests, ThreadPool& pool);
  size_t max_tokens() const { return max_tokens_; }

 private:
  struct Best {
    float value;
    int32_t id;
  };
  // Soft-caps logits[count] in place and folds them into `best` (ids: id_base + i, or ids[i]),
  // skipping ids outside `mask` when one is given.
  void Finish(float* logits, size_t count, size_t id_base, const int32_t* ids, const uint64_t* mask, Best& best) const;

  const Model& model_;
  size_t max_tokens_ = 1;
  std::vector<float> block_scratch_;   // [threads, max_tokens, kBlockRows]
  std::vector<float> gathered_;        // [max_tokens, hidden]: ComputeFull's hidden states side by side
  std::vector<uint8_t> packed_;        // activation packing for an integer embedding ([max_tokens] rows)
  std::vector<Best> best_;             // [threads, max_tokens]
};

}  // namespace fgemma
