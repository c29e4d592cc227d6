// Gemma 3 text-model configuration: named factories for the shapes we know (checked against file
// metadata at load) and a parser for Hugging Face config.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/json.h"
#include "util/status.h"

namespace fgemma {

// Caps on a model's shape, far above any Gemma 3 (270M: 18 layers, 640 wide, 4 heads of 256; 27B:
// 62 layers, 5376 wide, 21504 MLP, 32 heads of 128), so nonsense metadata is refused before it sizes
// an allocation.
inline constexpr int kMaxLayers = 1024;
inline constexpr int kMaxHeads = 1024;
inline constexpr int kMaxHeadDim = 4096;
inline constexpr int kMaxHidden = 1 << 18;
inline constexpr int kMaxVocab = 1 << 24;
inline constexpr int kMaxPositions = 1 << 24;

enum class LayerKind : uint8_t { kSliding, kGlobal };

struct ModelConfig {
  std::string name;              // "270m", "tiny-mqa", or "custom"
  int vocab_size = 0;
  int hidden = 0;                // d_model
  int intermediate = 0;          // MLP width
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int sliding_window = 0;
  int max_position_embeddings = 0;
  float query_pre_attn_scalar = 0;  // scores scale = query_pre_attn_scalar ** -0.5
  float rms_norm_eps = 1e-6f;
  float rope_theta_global = 1e6f;
  float rope_theta_local = 1e4f;
  float rope_scaling_factor = 1.0f;  // linear scaling, global layers only
  float attn_logit_softcap = 0;      // 0 = none
  float final_logit_softcap = 0;     // 0 = none
  int bos_token_id = 2;
  std::vector<int> eos_token_ids = {1, 106};
  int pad_token_id = 0;
  std::vector<LayerKind> layer_kinds;  // one per layer

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
  int num_global_layers() const;
  // Which names errors give the fields: Hugging Face config.json keys or GGUF metadata keys.
  enum class KeyNames { kHuggingFace, kGguf };
  // Checks that the values make sense, the one place every loader calls: sizes positive and within
  // the caps below (no allocation is sized from an absurd count), heads divisible by kv heads,
  // epsilon, RoPE bases, scalars finite and positive, softcaps finite and not negative. Each error
  // names the key as the file spells it.
  Status Validate(KeyNames names = KeyNames::kHuggingFace) const;
  // The size checks alone, for loaders to run before they build anything sized by the counts
  // (layer_kinds); Validate runs them too.
  Status ValidateSizes(KeyNames names = KeyNames::kHuggingFace) const;
  uint64_t ParameterCount() const;
};

// Named configurations of SYNTH.md and FunctionGemma: "tiny-mqa", "tiny-gqa", "mini", "270m".
Result<ModelConfig> ConfigByName(const std::string& name);
std::vector<std::string> KnownConfigNames();

// Parses Hugging Face config.json (model_type gemma3_text, or gemma3 with text_config).
// `source` names the file in errors.
Result<ModelConfig> ConfigFromHfJson(const Json& json, const std::string& source);
Result<ModelConfig> ConfigFromHfFile(const std::string& path);
// Serializes back to a Hugging Face config.json (used by `fgemma synth`).
Json ConfigToHfJson(const ModelConfig& config);

// The standard Gemma 3 pattern: every `pattern`-th layer (1-based) is global.
std::vector<LayerKind> SlidingPattern(int num_layers, int pattern);

}  // namespace fgemma
