// Helpers shared by the io tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "test_support.h"

namespace fgemma::test {

// The GGUF fixture "models/mini-<type>.gguf", opened (ADD_FAILURE and an empty file when it fails).
inline GgufFile OpenMiniGguf(const std::string& type) {
  auto f = GgufFile::Open(FixturePath("models/mini-" + type + ".gguf"));
  if (!f.ok()) {
    ADD_FAILURE() << f.status().ToString();
    return GgufFile();
  }
  return std::move(f).value();
}

// The layer-tensor suffixes of llama.cpp's gemma3 layout, in file order, with their Hugging Face names.
struct Gemma3TensorName {
  const char* gguf;
  const char* hf;
};
inline constexpr Gemma3TensorName kGemma3LayerTensors[] = {
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"attn_norm", "input_layernorm"},
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

// Row r of a tensor as float32 (any DType).
inline std::vector<float> RowAsFloats(const TensorView& v, size_t r) {
  std::vector<float> row(v.cols);
  DequantizeRow(v, r, row.data());
  return row;
}

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace fgemma::test
