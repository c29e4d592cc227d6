// A loaded Gemma 3 model: config plus views of every weight, used in place from the mmapped file(s).
//
// Quirks are resolved here, once: RMSNorm scales are stored as float32 `1 + w` whatever the file
// held (HF stores w, GGUF stores 1 + w), and the embedding scale sqrt(hidden) is a float32 constant.
// A Model is immutable after Load() and may be shared by any number of sessions and threads.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/weight_prep.h"
#include "model/config.h"
#include "model/tensor_list.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

class GgufFile;

struct LayerWeights {
  LayerKind kind = LayerKind::kSliding;
  KernelMatrix q_proj;     // [heads*head_dim, hidden]
  KernelMatrix k_proj;     // [kv_heads*head_dim, hidden]
  KernelMatrix v_proj;     // [kv_heads*head_dim, hidden]
  KernelMatrix o_proj;     // [hidden, heads*head_dim]
  KernelMatrix gate_proj;  // [intermediate, hidden]
  KernelMatrix up_proj;    // [intermediate, hidden]
  KernelMatrix down_proj;  // [hidden, intermediate]
  // RMSNorm scales, (1 + w) in float32.
  std::vector<float> input_norm;      // [hidden]
  std::vector<float> q_norm;          // [head_dim]
  std::vector<float> k_norm;          // [head_dim]
  std::vector<float> post_attn_norm;  // [hidden]
  std::vector<float> pre_ffn_norm;    // [hidden]
  std::vector<float> post_ffn_norm;   // [hidden]

 private:
  template <typename Self>
  static auto ProjectionsOf(Self& L) {
    return std::array{&L.q_proj, &L.k_proj, &L.v_proj, &L.o_proj, &L.gate_proj, &L.up_proj, &L.down_proj};
  }

 public:
  // The seven projections, in the order above: the one list of them (loops over a layer's matrices
  // use it), with their names in Hugging Face checkpoints ("<name>.weight").
  static constexpr size_t kNumProjections = 7;
  static constexpr std::array<const char*, kNumProjections> kProjectionNames = {
      "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  std::array<KernelMatrix*, kNumProjections> Projections() { return ProjectionsOf(*this); }
  std::array<const KernelMatrix*, kNumProjections> Projections() const { return ProjectionsOf(*this); }
};

struct ModelLoadOptions {
  // Hand the matrices to the kernels (PrepareWeights), which may repack them for the running SIMD
  // target. Writers that only read the stored tensors (convert) pass false.
  bool prepare_for_kernels = true;
  // Threads that fill the repacked copies (PrepareWeights: 1 or 2).
  int prepare_threads = 2;
};

// Where a loader finds tensors: returns the stored view for a spec, or an error naming the tensor.
using TensorLookup = std::function<Result<TensorView>(const TensorSpec&)>;

class Model {
 public:
  // Loads a Hugging Face directory (config.json + safetensors), a .safetensors file with config.json
  // beside it, or (when supported) a .gguf file.
  static Result<std::unique_ptr<Model>> Load(const std::string& path, const ModelLoadOptions& options = {});
  // The same for a GGUF file already open (runtime/loaded_model.h reads its tokenizer and chat
  // template from the same GgufFile, so the metadata is parsed once per load).
  static Result<std::unique_ptr<Model>> FromGguf(std::shared_ptr<const GgufFile> file,
                                                 const ModelLoadOptions& options = {});

  // Assembles a model from any tensor source. `norms_have_unit_offset` is true for GGUF files
  // (stored 1 + w). `owner` keeps the backing storage (mappings) alive.
  static Result<std::unique_ptr<Model>> Assemble(const ModelConfig& config, const TensorLookup& lookup,
                                                 bool norms_have_unit_offset, std::shared_ptr<void> owner,
                                                 std::string source);

  const ModelConfig& config() const { return config_; }
  const KernelMatrix& embedding() const { return embedding_; }  // [vocab, hidden], also the head
  const std::vector<float>& final_norm() const { return final_norm_; }  // (1 + w), [hidden]
  const LayerWeights& layer(int i) const { return layers_[static_cast<size_t>(i)]; }
  float embedding_scale() const { return embedding_scale_; }   // float32(sqrt(hidden))
  const std::string& source() const { return source_; }        // path it was loaded from
  // Type of the projection weights ("bf16", "q8_0", ...; "mixed" if they differ).
  std::string weight_type_name() const;
  // Bytes of weights the model maps (each tensor once).
  uint64_t weight_bytes() const;
  // Bytes of the copies the kernels made of the matrices at load (0 if none), and the name of the
  // layout they read ("" = as stored; see kernels/weight_prep.h).
  size_t repacked_bytes() const { return prepared_.repacked_bytes(); }
  const std::string& weight_layout() const { return prepared_.layout(); }
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
  // Hands the embedding (the largest matrix of every decode step, as the head) and the projections
  // to the kernels. Load does it once, before any Session exists.
  void PrepareForKernels(int threads);

  ModelConfig config_;
  KernelMatrix embedding_;
  std::vector<float> final_norm_;
  std::vector<LayerWeights> layers_;
  float embedding_scale_ = 1;
  uint64_t fingerprint_ = 0;
  std::shared_ptr<void> owner_;
  PreparedWeights prepared_;
  std::string source_;
};

}  // namespace fgemma
