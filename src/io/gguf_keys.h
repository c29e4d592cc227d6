// The GGUF metadata keys fgemma reads and writes, in one table: each key's name, the type it is
// written as, whether a reader requires it, and the value assumed when an optional key is absent.
// The GGUF reader (io/gguf.cpp: alignment, tokenizer), the model loader (model/model_gguf.cpp), the
// writer (io/gguf_writer.cpp) and the converter's metadata (model/convert_metadata.cpp) all spell
// keys through it, so a reader and a writer cannot disagree on a name or a default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"
#include "util/status.h"

namespace fgemma {

class GgufWriter;

struct GgufKey {
  std::string_view name;
  GgufType type;                          // as written; readers accept any integer / float type that fits
  GgufType element = GgufType::kUint8;    // arrays: the element type
  bool required = false;                  // a reader refuses a file without it
  double default_number = 0;              // optional numeric keys: the value assumed when absent
  std::string_view default_text = {};     // optional string keys: the value assumed when absent
  std::string_view default_key = {};      // optional keys whose absent value is another key's

  float default_f32() const { return static_cast<float>(default_number); }
  uint32_t default_u32() const { return static_cast<uint32_t>(default_number); }
};

namespace gguf_key {
using T = GgufType;

// general.*
inline constexpr GgufKey kArchitecture{.name = "general.architecture", .type = T::kString, .required = true};
inline constexpr GgufKey kName{.name = "general.name", .type = T::kString};
inline constexpr GgufKey kAlignment{.name = "general.alignment", .type = T::kUint32, .default_number = 32};
inline constexpr GgufKey kFileType{.name = "general.file_type", .type = T::kUint32};

// gemma3.*: the config. Optional keys take Gemma 3's fixed values when absent (llama.cpp stores
// none of them for gemma3; fgemma's writer adds one only when a config differs).
inline constexpr GgufKey kContextLength{.name = "gemma3.context_length", .type = T::kUint32, .required = true};
inline constexpr GgufKey kEmbeddingLength{.name = "gemma3.embedding_length", .type = T::kUint32, .required = true};
inline constexpr GgufKey kBlockCount{.name = "gemma3.block_count", .type = T::kUint32, .required = true};
inline constexpr GgufKey kFeedForwardLength{.name = "gemma3.feed_forward_length", .type = T::kUint32, .required = true};
inline constexpr GgufKey kHeadCount{.name = "gemma3.attention.head_count", .type = T::kUint32, .required = true};
inline constexpr GgufKey kHeadCountKv{.name = "gemma3.attention.head_count_kv", .type = T::kUint32, .required = true};
inline constexpr GgufKey kKeyLength{.name = "gemma3.attention.key_length", .type = T::kUint32, .required = true};
inline constexpr GgufKey kValueLength{.name = "gemma3.attention.value_length", .type = T::kUint32,
                                      .default_key = kKeyLength.name};
inline constexpr GgufKey kRmsEpsilon{.name = "gemma3.attention.layer_norm_rms_epsilon", .type = T::kFloat32,
                                     .required = true};
inline constexpr GgufKey kRopeFreqBase{.name = "gemma3.rope.freq_base", .type = T::kFloat32, .default_number = 1e6};
inline constexpr GgufKey kSlidingWindow{.name = "gemma3.attention.sliding_window", .type = T::kUint32, .required = true};
// "linear" or "none"; with "linear", rope.scaling.factor is required.
inline constexpr GgufKey kRopeScalingType{.name = "gemma3.rope.scaling.type", .type = T::kString, .default_text = "none"};
inline constexpr GgufKey kRopeScalingFactor{.name = "gemma3.rope.scaling.factor", .type = T::kFloat32,
                                            .default_number = 1};
inline constexpr GgufKey kRopeFreqBaseSwa{.name = "gemma3.rope.freq_base_swa", .type = T::kFloat32,
                                          .default_number = 1e4};
// Every Nth layer is global.
inline constexpr GgufKey kSlidingWindowPattern{.name = "gemma3.attention.sliding_window_pattern", .type = T::kUint32,
                                               .default_number = 6};
inline constexpr GgufKey kQueryPreAttnScalar{.name = "gemma3.attention.query_pre_attn_scalar", .type = T::kFloat32,
                                             .default_key = kKeyLength.name};
inline constexpr GgufKey kFinalLogitSoftcap{.name = "gemma3.final_logit_softcapping", .type = T::kFloat32};  // 0: none
inline constexpr GgufKey kAttnLogitSoftcap{.name = "gemma3.attn_logit_softcapping", .type = T::kFloat32};    // 0: none

// tokenizer.*: the vocabulary (GgufFile::ReadTokenizer) and chat template. Absent ids are -1 in
// GgufTokenizer; the model loader's defaults for bos/eos are the config's.
inline constexpr GgufKey kTokenizerModel{.name = "tokenizer.ggml.model", .type = T::kString};
inline constexpr GgufKey kTokenizerPre{.name = "tokenizer.ggml.pre", .type = T::kString};
inline constexpr GgufKey kTokens{.name = "tokenizer.ggml.tokens", .type = T::kArray, .element = T::kString,
                                 .required = true};
inline constexpr GgufKey kScores{.name = "tokenizer.ggml.scores", .type = T::kArray, .element = T::kFloat32};
inline constexpr GgufKey kTokenType{.name = "tokenizer.ggml.token_type", .type = T::kArray, .element = T::kInt32};
inline constexpr GgufKey kMerges{.name = "tokenizer.ggml.merges", .type = T::kArray, .element = T::kString};
inline constexpr GgufKey kBosTokenId{.name = "tokenizer.ggml.bos_token_id", .type = T::kUint32};
inline constexpr GgufKey kEosTokenId{.name = "tokenizer.ggml.eos_token_id", .type = T::kUint32};
inline constexpr GgufKey kUnknownTokenId{.name = "tokenizer.ggml.unknown_token_id", .type = T::kUint32};
inline constexpr GgufKey kPaddingTokenId{.name = "tokenizer.ggml.padding_token_id", .type = T::kUint32};
inline constexpr GgufKey kSeparatorTokenId{.name = "tokenizer.ggml.separator_token_id", .type = T::kUint32};
inline constexpr GgufKey kEotTokenId{.name = "tokenizer.ggml.eot_token_id", .type = T::kUint32};
inline constexpr GgufKey kEomTokenId{.name = "tokenizer.ggml.eom_token_id", .type = T::kUint32};
inline constexpr GgufKey kMaskTokenId{.name = "tokenizer.ggml.mask_token_id", .type = T::kUint32};
inline constexpr GgufKey kAddBosToken{.name = "tokenizer.ggml.add_bos_token", .type = T::kBool};
inline constexpr GgufKey kAddEosToken{.name = "tokenizer.ggml.add_eos_token", .type = T::kBool};
inline constexpr GgufKey kAddSpacePrefix{.name = "tokenizer.ggml.add_space_prefix", .type = T::kBool};
inline constexpr GgufKey kChatTemplate{.name = "tokenizer.chat_template", .type = T::kString};
// Named templates: kChatTemplate.name + "." + name each, their names listed in kChatTemplates.
inline constexpr GgufKey kChatTemplates{.name = "tokenizer.chat_templates", .type = T::kArray, .element = T::kString};

// The table, for code that walks every key (tests).
inline constexpr const GgufKey* kAll[] = {
    &kArchitecture, &kName, &kAlignment, &kFileType, &kContextLength, &kEmbeddingLength, &kBlockCount,
    &kFeedForwardLength, &kHeadCount, &kHeadCountKv, &kKeyLength, &kValueLength, &kRmsEpsilon, &kRopeFreqBase,
    &kSlidingWindow, &kRopeScalingType, &kRopeScalingFactor, &kRopeFreqBaseSwa, &kSlidingWindowPattern,
    &kQueryPreAttnScalar, &kFinalLogitSoftcap, &kAttnLogitSoftcap, &kTokenizerModel, &kTokenizerPre, &kTokens,
    &kScores, &kTokenType, &kMerges, &kBosTokenId, &kEosTokenId, &kUnknownTokenId, &kPaddingTokenId,
    &kSeparatorTokenId, &kEotTokenId, &kEomTokenId, &kMaskTokenId, &kAddBosToken, &kAddEosToken, &kAddSpacePrefix,
    &kChatTemplate, &kChatTemplates,
};
}  // namespace gguf_key

// Reads `key` into *out. Present: the GgufFile getter's value or error. Absent: NotFound for a
// required key; else the key's default (default_number / default_text), or *out left as it is when
// the default is another key's value (the caller has set it from that key).
Status ReadGgufKey(const GgufFile& f, const GgufKey& key, uint32_t* out);
Status ReadGgufKey(const GgufFile& f, const GgufKey& key, int32_t* out);
Status ReadGgufKey(const GgufFile& f, const GgufKey& key, float* out);
Status ReadGgufKey(const GgufFile& f, const GgufKey& key, std::string* out);

// Adds `key` with a value of its type (Internal naming the key when the value's type is another).
Status AddGgufKey(GgufWriter& w, const GgufKey& key, uint32_t v);
Status AddGgufKey(GgufWriter& w, const GgufKey& key, float v);
Status AddGgufKey(GgufWriter& w, const GgufKey& key, bool v);
Status AddGgufKey(GgufWriter& w, const GgufKey& key, std::string_view v);
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const char* v);
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const std::vector<std::string>& v);
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const std::vector<float>& v);
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const std::vector<int32_t>& v);

}  // namespace fgemma
