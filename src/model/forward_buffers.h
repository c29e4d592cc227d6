// Activations and scratch of the forward pass over one chunk of at most `max_batch` tokens,
// allocated once per session so that running a chunk allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/float_buffer.h"
#include "model/model.h"

namespace fgemma {

// The most rows of one sequence an attention task takes (their keys and values read once for all).
inline constexpr size_t kMaxAttentionRows = 16;

// B = max_batch, H = hidden, Q = heads * head_dim, KV = kv_heads * head_dim, I = intermediate,
// G = query heads per KV head, S = scores_stride, A = attention_rows.
struct ForwardBuffers {
  // `context` bounds the keys a query sees; `threads` is the pool's thread count (one scores
  // block per thread); `lora_rank` is LoraAdapter::max_layer_rank() (0 without an adapter).
  static ForwardBuffers Create(const Model& model, size_t max_batch, size_t context, int threads, size_t lora_rank = 0);

  FloatBuffer x;        // [B, H]   residual stream
  FloatBuffer xn;       // [B, H]   normed input of a block; after a chunk, the final-normed output
  FloatBuffer q;        // [B, Q]   queries
  FloatBuffer k;        // [B, KV]  the chunk's keys (sliding layers attend to them from here)
  FloatBuffer v;        // [B, KV]  the chunk's values
  FloatBuffer attn;     // [B, Q]   attention output per head, concatenated
  FloatBuffer proj;     // [B, H]   o_proj / down_proj output
  FloatBuffer gate;     // [B, I]   gate_proj output, then gelu_tanh(gate) * up
  FloatBuffer up;       // [B, I]   up_proj output
  FloatBuffer scores;   // [threads, A, G, S]  attention probabilities, one block per thread
  FloatBuffer lora_u;   // [B, R]   a LoRA adapter's A x for the projections of one input (R =
                        //          its max_layer_rank; empty without an adapter)
  size_t scores_stride = 0;     // S: the most keys a query sees (context, or window + B)
  size_t attention_rows = 1;    // A: the most rows of one sequence an attention task takes
  std::vector<uint8_t> packed;  // [B, packed row] a matrix input packed for integer kernels, sized
                                //   for the widest projection input (empty for float weights)
};

}  // namespace fgemma
