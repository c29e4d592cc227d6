// Decode and StreamDecoder. Each token's output bytes are precomputed at load (TokenizerModel::Piece:
// "▁" already turned into " ", byte tokens already one raw byte), so decoding is concatenation.
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_model.h"
#include "tokenizer/utf8.h"

namespace fgemma {
namespace {

using tokenizer_internal::TokenizerModel;

Status CheckId(const TokenizerModel& m, int32_t id, size_t position) {
  if (id >= 0 && id < m.size()) return Status::Ok();
  return OutOfRange("token id " + std::to_string(id) + " at position " + std::to_string(position) +
                    " is outside the vocabulary of " + std::to_string(m.size()) + " tokens");
}

bool Skipped(const TokenizerModel& m, int32_t id, const DecodeOptions& options) {
  return options.skip_special && (m.flags[id] & tokenizer_internal::kFlagSpecial) != 0;
}

}  // namespace

Result<std::string> Tokenizer::Decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  const TokenizerModel& m = *model_;
  std::string out;
  out.reserve(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    FGEMMA_RETURN_IF_ERROR(CheckId(m, ids[i], i));
    if (!Skipped(m, ids[i], options)) out.append(m.Piece(ids[i]));
  }
  return out;
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, const DecodeOptions& options)
    : tokenizer_(tokenizer), options_(options) {}

Result<std::string> StreamDecoder::Push(int32_t id) {
  const TokenizerModel& m = tokenizer_.model();
  // The position in an error is meaningless for a stream; name the id only.
  if (id < 0 || id >= m.size())
    return OutOfRange("token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(m.size()) + " tokens");
  if (Skipped(m, id, options_)) return std::string();
  pending_.append(m.Piece(id));
  const size_t hold = tokenizer_internal::Utf8IncompleteSuffix(pending_);
  std::string ready = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string StreamDecoder::Finish() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

}  // namespace fgemma
