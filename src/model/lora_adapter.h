// A PEFT LoRA adapter (a directory with adapter_config.json + adapter_model.safetensors) for the
// seven projections of a Gemma 3 model, applied at run time beside the untouched base weights:
//
//   y = W x + s * B (A x),   A [r, in], B [out, r],   s = lora_alpha / r  (alpha / sqrt(r) with
//                                                     use_rslora) times the user's scale
//
// Loading copies A and B to float32 (they are small: r x (in + out) per projection) with B already
// multiplied by s, so the forward pass adds B'(A x) and the merge (convert --lora) adds B'A.
// Anything else PEFT can save is refused with an error naming it: DoRA, modules_to_save, embedding
// or head adapters, biases, per-module rank/alpha patterns, module names other than the seven
// projections, shapes that do not match the base, rank 0, missing fields, unreadable files.
//
// An adapter is immutable after Load and may be shared by any number of sessions and threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "model/config.h"
#include "model/model.h"
#include "model/tensor_list.h"
#include "util/status.h"

namespace fgemma {

// One adapted projection. Empty (rank 0) when the adapter leaves the projection alone.
struct LoraProjection {
  size_t rank = 0;
  size_t in = 0;         // the base matrix's columns
  size_t out = 0;        // the base matrix's rows
  std::vector<float> a;  // [rank, in], A as stored
  std::vector<float> bt;  // [rank, out]: B transposed and multiplied by the scale s, so that the
                          //   update of a token is a combination of r contiguous rows of `out`
                          //   values (kernels/vec.h AddRowCombination)
  KernelMatrix a_matrix;  // a view of `a` for MatMul
  bool empty() const { return rank == 0; }
};

// "DIR" or "DIR:SCALE" as the CLI's --lora takes it. The part after the last ':' is a scale only
// when it parses as a finite number, so a directory whose name holds ':' still works.
struct LoraSpec {
  std::string dir;
  float scale = 1.0f;
};
Result<LoraSpec> ParseLoraSpec(const std::string& text);

class LoraAdapter {
 public:
  // Reads `dir`/adapter_config.json and `dir`/adapter_model.safetensors and checks every tensor
  // against `config` (the base the adapter will run on). `user_scale` multiplies s.
  static Result<std::shared_ptr<const LoraAdapter>> Load(const std::string& dir, const ModelConfig& config,
                                                         float user_scale = 1.0f);
  static Result<std::shared_ptr<const LoraAdapter>> Load(const LoraSpec& spec, const ModelConfig& config) {
    return Load(spec.dir, config, spec.scale);
  }
  // Load, then CheckFits: the adapter every front end (CLI, C API, server) runs over `model`.
  static Result<std::shared_ptr<const LoraAdapter>> LoadFor(const LoraSpec& spec, const Model& model);
  // The same from the "DIR[:SCALE]" text of `--lora` (ParseLoraSpec); "" is no adapter (null).
  static Result<std::shared_ptr<const LoraAdapter>> LoadFor(const std::string& spec, const Model& model);

  // Projection `index` (LayerWeights::kProjectionNames order) of layer `layer`.
  const LoraProjection& projection(int layer, size_t index) const {
    return layers_[static_cast<size_t>(layer)][index];
  }
  // The projection a tensor spec names (a kProjection of some layer), or null.
  const LoraProjection* ForTensor(const TensorSpec& spec) const;

  // Refuses a model whose projections differ in number or shape from those the adapter was
  // loaded for (an adapter of one base handed to another).
  Status CheckFits(const Model& model) const;

  const std::string& dir() const { return dir_; }
  size_t rank() const { return rank_; }        // r of the config
  float alpha() const { return alpha_; }
  bool rslora() const { return rslora_; }
  float user_scale() const { return user_scale_; }
  float scale() const { return scale_; }        // s times the user's scale: what B was multiplied by
  // Identifies the adapter: a hash of the config and tensor file bytes, and the user's scale. Cache
  // files of a session with one adapter are refused by a session with another (or none).
  uint64_t fingerprint() const { return fingerprint_; }
  // The largest sum of ranks over the projections that read one input (q/k/v, gate/up), and over
  // all projections of one layer: the forward pass sizes its scratch by it.
  size_t max_layer_rank() const { return max_layer_rank_; }

  // Bytes of the float32 copies of A and B.
  uint64_t bytes() const;
  // Names of the adapted modules ("q_proj", ...) as the config lists them.
  const std::vector<std::string>& target_modules() const { return targets_; }

 private:
  LoraAdapter() = default;
  std::string dir_;
  size_t rank_ = 0;
  float alpha_ = 0;
  bool rslora_ = false;
  float user_scale_ = 1;
  float scale_ = 0;
  uint64_t fingerprint_ = 0;
  size_t max_layer_rank_ = 0;
  std::vector<std::string> targets_;
  std::vector<std::array<LoraProjection, LayerWeights::kNumProjections>> layers_;
};

// Adds the adapter's update of output row `row` to `w_row` (the base row as float32, `in` values):
// w_row += sum_k b'[row, k] * A[k, :] (the merge of convert --lora).
void AddLoraRow(const LoraProjection& p, size_t row, float* w_row);

}  // namespace fgemma
