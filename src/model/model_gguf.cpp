// Model::Load for GGUF files in llama.cpp's gemma3 layout.
//
// GGUF keeps the config in `gemma3.*` keys and the norms as `1 + w` (llama.cpp's converter adds the
// one), so Assemble is told not to add it again. Keys llama.cpp does not store for gemma3 take the
// architecture's fixed values: sliding-layer RoPE base 10000, every 6th layer global,
// query_pre_attn_scalar = head_dim (true of every Gemma 3 size but 27B, whose GGUF llama.cpp itself
// special-cases).
#include <algorithm>
#include <memory>

#include "io/gguf.h"
#include "model/model.h"
#include "model/model_gguf.h"

namespace fgemma {
namespace {

template <typename T>
Status Require(const Result<T>& r, T* out) {
  if (!r.ok()) return r.status();
  *out = r.value();
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ConfigFromGguf(const GgufFile& f) {
  FGEMMA_TRY(std::string arch, f.Architecture());
  if (arch != "gemma3") return Unsupported(f.name() + ": general.architecture '" + arch + "' is not supported (gemma3)");
  ModelConfig c;
  c.name = "custom";
  uint32_t u = 0;
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.embedding_length"), &u));
  c.hidden = static_cast<int>(u);
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.feed_forward_length"), &u));
  c.intermediate = static_cast<int>(u);
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.block_count"), &u));
  c.num_layers = static_cast<int>(u);
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.attention.head_count"), &u));
  c.num_heads = static_cast<int>(u);
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.attention.head_count_kv"), &u));
  c.num_kv_heads = static_cast<int>(u);
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.attention.key_length"), &u));
  c.head_dim = static_cast<int>(u);
  if (f.Has("gemma3.attention.value_length")) {
    FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.attention.value_length"), &u));
    if (static_cast<int>(u) != c.head_dim) return Unsupported(f.name() + ": value_length differs from key_length");
  }
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.attention.sliding_window"), &u));
  c.sliding_window = static_cast<int>(u);
  FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.context_length"), &u));
  c.max_position_embeddings = static_cast<int>(u);
  FGEMMA_RETURN_IF_ERROR(Require(f.GetF32("gemma3.attention.layer_norm_rms_epsilon"), &c.rms_norm_eps));
  c.rope_theta_global = 1e6f;
  if (f.Has("gemma3.rope.freq_base")) FGEMMA_RETURN_IF_ERROR(Require(f.GetF32("gemma3.rope.freq_base"), &c.rope_theta_global));
  c.rope_theta_local = 1e4f;
  if (f.Has("gemma3.rope.freq_base_swa"))
    FGEMMA_RETURN_IF_ERROR(Require(f.GetF32("gemma3.rope.freq_base_swa"), &c.rope_theta_local));
  if (f.Has("gemma3.rope.scaling.type")) {
    FGEMMA_TRY(std::string type, f.GetString("gemma3.rope.scaling.type"));
    if (type == "linear") {
      FGEMMA_RETURN_IF_ERROR(Require(f.GetF32("gemma3.rope.scaling.factor"), &c.rope_scaling_factor));
    } else if (type != "none") {
      return Unsupported(f.name() + ": gemma3.rope.scaling.type '" + type + "' is not supported (linear)");
    }
  }
  c.query_pre_attn_scalar = static_cast<float>(c.head_dim);
  if (f.Has("gemma3.attention.query_pre_attn_scalar"))
    FGEMMA_RETURN_IF_ERROR(Require(f.GetF32("gemma3.attention.query_pre_attn_scalar"), &c.query_pre_attn_scalar));
  int pattern = 6;
  if (f.Has("gemma3.attention.sliding_window_pattern")) {
    FGEMMA_RETURN_IF_ERROR(Require(f.GetU32("gemma3.attention.sliding_window_pattern"), &u));
    pattern = static_cast<int>(u);
  }
  c.layer_kinds = SlidingPattern(c.num_layers, pattern);
  if (f.Has("gemma3.final_logit_softcapping"))
    FGEMMA_RETURN_IF_ERROR(Require(f.GetF32("gemma3.final_logit_softcapping"), &c.final_logit_softcap));
  if (f.Has("gemma3.attn_logit_softcapping"))
    FGEMMA_RETURN_IF_ERROR(Require(f.GetF32("gemma3.attn_logit_softcapping"), &c.attn_logit_softcap));
  // Vocabulary size: the embedding's rows (the tokenizer arrays must agree when present).
  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound(f.name() + ": tensor 'token_embd.weight' is missing");
  c.vocab_size = static_cast<int>(embd->rows());
  if (f.Has("tokenizer.ggml.bos_token_id")) FGEMMA_RETURN_IF_ERROR(Require(f.GetI32("tokenizer.ggml.bos_token_id"), &c.bos_token_id));
  c.eos_token_ids = {1, 106};  // <eos> and <end_of_turn> (the file names only one)
  if (f.Has("tokenizer.ggml.eos_token_id")) {
    int32_t eos = 0;
    FGEMMA_RETURN_IF_ERROR(Require(f.GetI32("tokenizer.ggml.eos_token_id"), &eos));
    if (eos != 1 && eos != 106) c.eos_token_ids.push_back(eos);
  }
  FGEMMA_RETURN_IF_ERROR(c.Validate().WithContext(f.name()));
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
