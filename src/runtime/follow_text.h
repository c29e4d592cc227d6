// Timing aid for random-weight models: a ChoiceHook that writes a given output (say, the call a
// real checkpoint writes for an utterance) instead of the argmax.
//
// Each head step takes the allowed token that continues the text (its canonical token when
// allowed, else the longest allowed one) and forced runs must match it; the model and the head are
// evaluated exactly as for a real choice, so the time is that of the path a real checkpoint would
// take to write this output. After the text ends, the argmax decides again. Installed by
// `fgemma call --follow`, benchmarks and tests; production decoding never sees it.
#pragma once

#include <string>

#include "runtime/call_generator.h"
#include "runtime/token_constraint.h"

namespace fgemma {

class FollowText : public ChoiceHook {
 public:
  FollowText(const ConstraintVocab& vocab, std::string text) : vocab_(vocab), text_(std::move(text)) {}

  void Start() override { at_ = 0; }
  Result<int32_t> Choose(const HeadChoice& choice) override;
  Status Appended(int32_t id) override;

 private:
  const ConstraintVocab& vocab_;
  std::string text_;
  size_t at_ = 0;  // bytes of text_ written so far
};

}  // namespace fgemma
