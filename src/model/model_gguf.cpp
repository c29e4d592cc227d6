// Model::Load for GGUF files in llama.cpp's gemma3 layout.
//
// GGUF keeps the config in `gemma3.*` keys (io/gguf_keys.h) and the norms as `1 + w` (llama.cpp's
// converter adds the one), so Assemble is told not to add it again. Keys llama.cpp does not store
// for gemma3 take the table's defaults, the architecture's fixed values: sliding-layer RoPE base
// 10000, every 6th layer global, query_pre_attn_scalar = head_dim (true of every Gemma 3 size but
// 27B, whose GGUF llama.cpp itself special-cases).
#include <algorithm>
#include <limits>
#include <memory>

#include "io/gguf.h"
#include "io/gguf_keys.h"
#include "model/model.h"
#include "model/model_gguf.h"

namespace fgemma {

Result<ModelConfig> ConfigFromGguf(const GgufFile& f) {
  namespace k = gguf_key;
  FGEMMA_TRY(std::string arch, f.Architecture());
  if (arch != "gemma3") return Unsupported(f.name() + ": general.architecture '" + arch + "' is not supported (gemma3)");
  ModelConfig c;
  c.name = "custom";
  // Integer keys read into u (range-checked as u32 by ReadGgufKey), then narrowed only if they fit
  // an int (block_count 2^32-1 must not become -1); Validate checks the values for sense.
  uint32_t u = 0;
  auto read_int = [&](const GgufKey& key, int* out) -> Status {
    FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, key, &u));
    if (u > static_cast<uint32_t>(std::numeric_limits<int>::max()))
      return OutOfRange(f.name() + ": metadata key '" + std::string(key.name) + "': value " + std::to_string(u) +
                        " is out of range");
    *out = static_cast<int>(u);
    return Status::Ok();
  };
  FGEMMA_RETURN_IF_ERROR(read_int(k::kEmbeddingLength, &c.hidden));
  FGEMMA_RETURN_IF_ERROR(read_int(k::kFeedForwardLength, &c.intermediate));
  FGEMMA_RETURN_IF_ERROR(read_int(k::kBlockCount, &c.num_layers));
  FGEMMA_RETURN_IF_ERROR(read_int(k::kHeadCount, &c.num_heads));
  FGEMMA_RETURN_IF_ERROR(read_int(k::kHeadCountKv, &c.num_kv_heads));
  FGEMMA_RETURN_IF_ERROR(read_int(k::kKeyLength, &c.head_dim));
  int value_length = c.head_dim;  // defaults to key_length
  FGEMMA_RETURN_IF_ERROR(read_int(k::kValueLength, &value_length));
  if (value_length != c.head_dim) return Unsupported(f.name() + ": value_length differs from key_length");
  FGEMMA_RETURN_IF_ERROR(read_int(k::kSlidingWindow, &c.sliding_window));
  FGEMMA_RETURN_IF_ERROR(read_int(k::kContextLength, &c.max_position_embeddings));
  FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, k::kRmsEpsilon, &c.rms_norm_eps));
  FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, k::kRopeFreqBase, &c.rope_theta_global));
  FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, k::kRopeFreqBaseSwa, &c.rope_theta_local));
  std::string scaling;
  FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, k::kRopeScalingType, &scaling));
  if (scaling == "linear") {
    // The factor is required with linear scaling (its default 1 would mean no scaling).
    FGEMMA_TRY(c.rope_scaling_factor, f.GetF32(k::kRopeScalingFactor.name));
  } else if (scaling != k::kRopeScalingType.default_text) {
    return Unsupported(f.name() + ": " + std::string(k::kRopeScalingType.name) + " '" + scaling +
                       "' is not supported (linear)");
  }
  c.query_pre_attn_scalar = static_cast<float>(c.head_dim);  // defaults to key_length
  FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, k::kQueryPreAttnScalar, &c.query_pre_attn_scalar));
  int pattern = 0;
  FGEMMA_RETURN_IF_ERROR(read_int(k::kSlidingWindowPattern, &pattern));
  // Vocabulary size: the embedding's rows (the tokenizer arrays must agree when present).
  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound(f.name() + ": tensor 'token_embd.weight' is missing");
  c.vocab_size = embd->rows() > static_cast<uint64_t>(kMaxVocab) ? kMaxVocab + 1 : static_cast<int>(embd->rows());
  // Sizes checked before layer_kinds is sized by block_count.
  FGEMMA_RETURN_IF_ERROR(c.ValidateSizes(ModelConfig::KeyNames::kGguf).WithContext(f.name()));
  c.layer_kinds = SlidingPattern(c.num_layers, pattern);
  FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, k::kFinalLogitSoftcap, &c.final_logit_softcap));
  FGEMMA_RETURN_IF_ERROR(ReadGgufKey(f, k::kAttnLogitSoftcap, &c.attn_logit_softcap));
  if (f.Has(k::kBosTokenId.name)) {
    FGEMMA_TRY(c.bos_token_id, f.GetI32(k::kBosTokenId.name));
  }
  c.eos_token_ids = {1, 106};  // <eos> and <end_of_turn> (the file names only one)
  if (f.Has(k::kEosTokenId.name)) {
    FGEMMA_TRY(int32_t eos, f.GetI32(k::kEosTokenId.name));
    if (eos != 1 && eos != 106) c.eos_token_ids.push_back(eos);
  }
  FGEMMA_RETURN_IF_ERROR(c.Validate(ModelConfig::KeyNames::kGguf).WithContext(f.name()));
  for (const auto& name : KnownConfigNames()) {
    const ModelConfig k = ConfigByName(name).value();
    if (k.vocab_size == c.vocab_size && k.hidden == c.hidden && k.num_layers == c.num_layers &&
        k.intermediate == c.intermediate && k.sliding_window == c.sliding_window)
      c.name = name;
  }
  return c;
}

Result<std::unique_ptr<Model>> LoadGgufModel(const std::string& path) {
  FGEMMA_TRY(GgufFile file, GgufFile::Open(path));
  return LoadGgufModel(std::make_shared<const GgufFile>(std::move(file)));
}

Result<std::unique_ptr<Model>> LoadGgufModel(std::shared_ptr<const GgufFile> owner) {
  const GgufFile* f = owner.get();
  const std::string& path = f->name();
  FGEMMA_TRY(ModelConfig config, ConfigFromGguf(*f));
  // Every tensor in the file must be one the model uses (an unknown one means a different model).
  std::vector<std::string> expected;
  ForEachTensor(config, [&](const TensorSpec& s) { expected.push_back(s.gguf_name); });
  for (const auto& t : f->tensors()) {
    if (std::find(expected.begin(), expected.end(), t.name) == expected.end()) {
      if (t.name == "output.weight") return Unsupported(path + ": untied output.weight is not supported (Gemma 3 ties it)");
      if (t.name.rfind("rope_freqs", 0) == 0) continue;
      return InvalidArgument(path + ": unknown tensor '" + std::string(t.name) + "'");
    }
  }
  auto lookup = [f, &path](const TensorSpec& spec) -> Result<TensorView> {
    const GgufTensorInfo* t = f->FindTensor(spec.gguf_name);
    if (t == nullptr) return NotFound(path + ": tensor '" + spec.gguf_name + "' is missing");
    if (t->ne[2] != 1 || t->ne[3] != 1 || (spec.is_1d && t->n_dims != 1))
      return InvalidArgument(path + ": tensor '" + spec.gguf_name + "' has unexpected dimensions");
    return f->GetTensorView(*t);
  };
  return Model::Assemble(config, lookup, /*norms_have_unit_offset=*/true, std::const_pointer_cast<GgufFile>(owner), path);
}

}  // namespace fgemma
