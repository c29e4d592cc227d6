#include "tokenizer/gguf_vocab.h"

#include <string>

#include "tokenizer/tokenizer_model.h"

namespace fgemma {

using namespace tokenizer_internal;

Result<GgufVocab> ExportGgufVocab(const Tokenizer& tokenizer, int32_t vocab_size) {
  const TokenizerModel& m = tokenizer.model();
  if (m.size() > vocab_size)
    return InvalidArgument("tokenizer has " + std::to_string(m.size()) + " tokens but the model's embedding only " +
                           std::to_string(vocab_size) + " rows");
  GgufVocab out;
  VocabSpec& v = out.spec;
  v.tokens.reserve(static_cast<size_t>(vocab_size));
  v.scores.reserve(static_cast<size_t>(vocab_size));
  v.types.reserve(static_cast<size_t>(vocab_size));
  for (int32_t id = 0; id < m.size(); ++id) {
    const uint8_t f = m.flags[static_cast<size_t>(id)];
    TokenType type = TokenType::kNormal;
    if (f & kFlagAdded) {
      type = (f & kFlagSpecial) ? TokenType::kControl : TokenType::kUserDefined;
    } else if (f & kFlagByte) {
      type = TokenType::kByte;
    }
    v.tokens.emplace_back(m.Text(id));
    v.scores.push_back(type == TokenType::kNormal ? -static_cast<float>(id) : 0.0f);
    v.types.push_back(static_cast<int32_t>(type));
  }
  for (int32_t id = m.size(); id < vocab_size; ++id) {
    v.tokens.push_back("[PAD" + std::to_string(id) + "]");
    v.scores.push_back(-1000.0f);
    v.types.push_back(static_cast<int32_t>(TokenType::kUnused));
  }
  v.bos_id = tokenizer.bos_id();
  v.eos_ids = tokenizer.eos_ids();
  v.add_space_prefix = m.prepend_space;
  out.unk_id = m.unk_id;
  return out;
}

}  // namespace fgemma
