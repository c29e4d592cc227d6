// A loaded Gemma 3 model: config plus views of every weight, used in place from the mmapped file(s).
//
// Quirks are resolved here, once: RMSNorm scales are stored as float32 `1 + w` whatever the file
// held (HF stores w, GGUF stores 1 + w), and the embedding scale sqrt(hidden) is a float32 constant.
// A Model is immutable after Load() and may be shared by any number of sessions and threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tensor_list.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

struct LayerWeights {
  LayerKind kind = LayerKind::kSliding;
  TensorView q_proj;     // [heads*head_dim, hidden]
  TensorView k_proj;     // [kv_heads*head_dim, hidden]
  TensorView v_proj;     // [kv_heads*head_dim, hidden]
  TensorView o_proj;     // [hidden, heads*head_dim]
  TensorView gate_proj;  // [intermediate, hidden]
  TensorView up_proj;    // [intermediate, hidden]
  TensorView down_proj;  // [hidden, intermediate]
  // RMSNorm scales, (1 + w) in float32.
  std::vector<float> input_norm;      // [hidden]
  std::vector<float> q_norm;          // [head_dim]
  std::vector<float> k_norm;          // [head_dim]
  std::vector<float> post_attn_norm;  // [hidden]
  std::vector<float> pre_ffn_norm;    // [hidden]
  std::vector<float> post_ffn_norm;   // [hidden]
};

// Where a loader finds tensors: returns the stored view for a spec, or an error naming the tensor.
using TensorLookup = std::function<Result<TensorView>(const TensorSpec&)>;

class Model {
 public:
  // Loads a Hugging Face directory (config.json + safetensors), a .safetensors file with config.json
  // beside it, or (when supported) a .gguf file.
  // Quantized matrices are then copied into the kernels' interleaved layout when the running SIMD
  // target has one (InterleaveForKernels); writers that only read the stored tensors pass false.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, bool interleave_for_kernels = true);

  // Assembles a model from any tensor source. `norms_have_unit_offset` is true for GGUF files
  // (stored 1 + w). `owner` keeps the backing storage (mappings) alive.
  static Result<std::unique_ptr<Model>> Assemble(const ModelConfig& config, const TensorLookup& lookup,
                                                 bool norms_have_unit_offset, std::shared_ptr<void> owner,
                                                 std::string source);

  const ModelConfig& config() const { return config_; }
  const TensorView& embedding() const { return embedding_; }   // [vocab, hidden], also the head
  const std::vector<float>& final_norm() const { return final_norm_; }  // (1 + w), [hidden]
  const LayerWeights& layer(int i) const { return layers_[static_cast<size_t>(i)]; }
  float embedding_scale() const { return embedding_scale_; }   // float32(sqrt(hidden))
  const std::string& source() const { return source_; }        // path it was loaded from
  // Type of the projection weights ("bf16", "q8_0", ...; "mixed" if they differ).
  std::string weight_type_name() const;
  // Bytes of weights the model maps (each tensor once).
  uint64_t weight_bytes() const;
  // Makes row-interleaved copies of the quantized matrices (TensorView::interleaved) when the
  // running kernels use them (nothing for float weights or on other targets; FGEMMA_INTERLEAVE=0
  // turns it off). Load does it; call it once, before any Session exists.
  void InterleaveForKernels();
  // Bytes of the row-interleaved copies made at load for the running kernels (0 if none).
  size_t interleaved_bytes() const { return interleaved_bytes_; }
  // Identifies the weights (config, tensor types and shapes, and sampled bytes of every tensor):
  // cache files of one model are refused by another.
  uint64_t fingerprint() const { return fingerprint_; }

  // The tensor ForEachTensor names by `spec`, for writers (convert): a matrix (embedding or
  // projection) as its stored view, a norm as its (1 + w) float32 scale. Exactly one is non-null
  // for a spec of this model's config.
  const TensorView* Matrix(const TensorSpec& spec) const;
  const std::vector<float>* Norm(const TensorSpec& spec) const;

 private:
  Model() = default;
  ModelConfig config_;
  TensorView embedding_;
  std::vector<float> final_norm_;
  std::vector<LayerWeights> layers_;
  float embedding_scale_ = 1;
  uint64_t fingerprint_ = 0;
  std::shared_ptr<void> owner_;

  std::shared_ptr<void> interleaved_;
  size_t interleaved_bytes_ = 0;
  std::string source_;
};

}  // namespace fgemma
