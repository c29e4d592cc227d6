#include "model/tensor_list.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace fgemma {

void ForEachTensor(const ModelConfig& c, const std::function<void(const TensorSpec&)>& visit) {
  const uint64_t hidden = static_cast<uint64_t>(c.hidden);
  const uint64_t inter = static_cast<uint64_t>(c.intermediate);
  const uint64_t q = static_cast<uint64_t>(c.q_dim());
  const uint64_t kv = static_cast<uint64_t>(c.kv_dim());
  const uint64_t hd = static_cast<uint64_t>(c.head_dim);

  visit({"model.embed_tokens.weight", "token_embd.weight", TensorRole::kEmbedding, -1,
         static_cast<uint64_t>(c.vocab_size), hidden, false, 2.5 / std::sqrt(static_cast<double>(c.hidden))});

  for (int i = 0; i < c.num_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    const std::string gg = "blk." + std::to_string(i) + ".";
    auto norm = [&](const char* hf_suffix, const char* gguf_suffix, uint64_t n, double amp) {
      visit({hf + hf_suffix, gg + gguf_suffix, TensorRole::kNorm, i, 1, n, true, amp});
    };
    auto proj = [&](const char* hf_suffix, const char* gguf_suffix, uint64_t out, uint64_t in) {
      visit({hf + hf_suffix, gg + gguf_suffix, TensorRole::kProjection, i, out, in, false,
             std::sqrt(3.0 / static_cast<double>(in))});
    };
    // Order follows SYNTH.md's table.
    norm("input_layernorm.weight", "attn_norm.weight", hidden, 0.5);
    proj("self_attn.q_proj.weight", "attn_q.weight", q, hidden);
    proj("self_attn.k_proj.weight", "attn_k.weight", kv, hidden);
    proj("self_attn.v_proj.weight", "attn_v.weight", kv, hidden);
    norm("self_attn.q_norm.weight", "attn_q_norm.weight", hd, 0.5);
    norm("self_attn.k_norm.weight", "attn_k_norm.weight", hd, 0.5);
    proj("self_attn.o_proj.weight", "attn_output.weight", hidden, q);
    norm("post_attention_layernorm.weight", "post_attention_norm.weight", hidden, 4.0);
    norm("pre_feedforward_layernorm.weight", "ffn_norm.weight", hidden, 0.5);
    proj("mlp.gate_proj.weight", "ffn_gate.weight", inter, hidden);
    proj("mlp.up_proj.weight", "ffn_up.weight", inter, hidden);
    proj("mlp.down_proj.weight", "ffn_down.weight", hidden, inter);
    norm("post_feedforward_layernorm.weight", "post_ffw_norm.weight", hidden, 4.0);
  }
  visit({"model.norm.weight", "output_norm.weight", TensorRole::kNorm, -1, 1, hidden, true, 0.5});
}

std::vector<TensorSpec> TensorsInGgufOrder(const ModelConfig& config) {
  static constexpr std::string_view kLayerOrder[] = {
      "attn_q.weight",    "attn_k.weight",       "attn_v.weight",      "attn_output.weight",
      "attn_q_norm.weight", "attn_k_norm.weight", "attn_norm.weight",   "post_attention_norm.weight",
      "ffn_norm.weight",  "post_ffw_norm.weight", "ffn_gate.weight",    "ffn_up.weight",
      "ffn_down.weight"};
  // Global tensors sort before layer 0: the embedding, then the final norm.
  auto rank = [](const TensorSpec& s) -> std::pair<int, int> {
    if (s.layer < 0) return {-1, s.role == TensorRole::kEmbedding ? 0 : 1};
    const std::string_view suffix = std::string_view(s.gguf_name).substr(s.gguf_name.find('.', 4) + 1);
    const auto* it = std::find(std::begin(kLayerOrder), std::end(kLayerOrder), suffix);
    return {s.layer, static_cast<int>(it - std::begin(kLayerOrder))};
  };
  std::vector<TensorSpec> specs;
  ForEachTensor(config, [&](const TensorSpec& s) { specs.push_back(s); });
  std::stable_sort(specs.begin(), specs.end(), [&](const TensorSpec& a, const TensorSpec& b) { return rank(a) < rank(b); });
  return specs;
}

}  // namespace fgemma
