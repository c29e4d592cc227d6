// Greedy decoding without a grammar: what other engines (llama.cpp, Hugging Face generate) do with
// FunctionGemma. The text is parsed afterwards, so it may not parse or validate; `fgemma eval
// --unconstrained` measures how often that happens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/call_generator.h"
#include "runtime/session.h"
#include "runtime/token_constraint.h"

namespace fgemma {

// Evaluates `prompt` at the session's position, then appends the argmax over the whole vocabulary
// until a token that ends the turn (<end_of_turn>, <eos>, <start_function_response>, or one of the
// model's EOS ids; it is kept in `out`), options.max_tokens tokens, or the end of the context.
// options.on_token sees each token and may stop (kCancelled status, like CallGenerator); the
// grammar-only options (restricted head, jump-forward, choice hook) do not apply. *ended says
// whether the turn ended.
Status DecodeFree(Session& session, const ConstraintVocab& vocab, std::span<const int32_t> prompt,
                  const ConstrainedOptions& options, std::vector<int32_t>* out, ConstrainedStats* stats, bool* ended);

}  // namespace fgemma
