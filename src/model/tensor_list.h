// The one list of Gemma 3 tensors. Loading (safetensors, GGUF), saving (synth, convert) and tests all
// walk ForEachTensor, so a name or shape is written down exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/config.h"

namespace fgemma {

enum class TensorRole : uint8_t {
  kEmbedding,      // [vocab, hidden], tied: also the output head
  kNorm,           // [n] RMSNorm weight, stored as w (HF) or 1 + w (GGUF)
  kProjection,     // [out, in]
};

struct TensorSpec {
  std::string hf_name;    // "model.layers.3.self_attn.q_proj.weight"
  std::string gguf_name;  // "blk.3.attn_q.weight"
  TensorRole role;
  int layer;              // -1 for embedding and final norm
  uint64_t rows;          // 1 for 1-D tensors
  uint64_t cols;          // row length (the `in` dimension)
  bool is_1d;
  // SYNTH.md amplitude for this tensor (double precision).
  double synth_amplitude;
};

void ForEachTensor(const ModelConfig& config, const std::function<void(const TensorSpec&)>& visit);

// The same tensors in the order llama.cpp's gemma3 GGUF files hold them (the fixtures' order):
// token_embd, output_norm, then per layer attn_q/k/v/output, attn_q/k_norm, attn_norm,
// post_attention_norm, ffn_norm, post_ffw_norm, ffn_gate/up/down.
std::vector<TensorSpec> TensorsInGgufOrder(const ModelConfig& config);

}  // namespace fgemma
