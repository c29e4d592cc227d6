#include "runtime/free_decode.h"

#include <algorithm>

namespace fgemma {
namespace {

bool EndsTurn(const ConstraintVocab& vocab, const std::vector<int32_t>& eos, int32_t id) {
  const int sym = vocab.SymbolOf(id);
  if (sym == kSymEndOfTurn || sym == kSymEos || sym == kSymStartResponse) return true;
  return std::find(eos.begin(), eos.end(), id) != eos.end();
}

}  // namespace

Status DecodeFree(Session& session, const ConstraintVocab& vocab, std::span<const int32_t> prompt,
                  const ConstrainedOptions& options, std::vector<int32_t>* out, ConstrainedStats* stats, bool* ended) {
  out->clear();
  *ended = false;
  if (prompt.empty()) return InvalidArgument("free decoding needs at least one prompt token");
  const std::vector<int32_t>& eos = session.model().config().eos_token_ids;
  HeadRequest head;
  head.index = prompt.size() - 1;
  FGEMMA_RETURN_IF_ERROR(session.Evaluate(prompt, std::span<HeadRequest>(&head, 1)));
  ++stats->model_calls;
  while (out->size() < options.max_tokens) {
    ++stats->head_steps;
    const int32_t next = head.argmax;
    out->push_back(next);
    ++stats->tokens;
    if (options.on_token && !options.on_token(next)) return Status(ErrorCode::kCancelled, "generation stopped by the token callback");
    if (EndsTurn(vocab, eos, next)) {
      *ended = true;
      break;
    }
    // A full context ends the answer like the token cap does (the turn is then unfinished).
    if (out->size() >= options.max_tokens || session.position() >= session.context()) break;
    head = HeadRequest{};
    FGEMMA_RETURN_IF_ERROR(session.Evaluate(std::span<const int32_t>(&next, 1), std::span<HeadRequest>(&head, 1)));
    ++stats->model_calls;
  }
  return Status::Ok();
}

}  // namespace fgemma
