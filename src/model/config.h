// Gemma 3 text-model configuration: named factories for the shapes we know (checked against file
// metadata at load) and a parser for Hugging Face config.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/json.h"
#include "util/status.h"

namespace fgemma {

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
  // Checks internal consistency (positive sizes, heads divisible by kv heads, ...).
  Status Validate() const;
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
