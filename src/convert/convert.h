// Conversion of a Gemma 3 model -- a Hugging Face directory or a GGUF file -- into one GGUF file in
// llama.cpp's gemma3 layout: tensors in TensorsInGgufOrder with ggml dims {in, out}, the tied
// embedding stored once (no output.weight), norms always float32 holding 1 + w, the embedding and
// projections in the requested type, and metadata llama.cpp reads (general.*, gemma3.* config,
// tokenizer.ggml.* vocabulary, tokenizer.chat_template).
//
// Memory: source tensors are read in place from their mappings, and each tensor is converted and
// written one block of rows at a time (about 1 MiB), so the converter holds at most one block of
// converted data; the source pages of each finished block are dropped from the process (they stay
// in the page cache), which keeps the peak resident set near the tokenizer's size rather than the
// model's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/lora_adapter.h"
#include "model/tensor_list.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

// llama-quantize's K-quant presets, with the per-tensor types it picks for a Gemma 3 model
// (llama_tensor_get_type): Q4_K_M / Q5_K_M write q4_K / q5_K, except q6_K for the tied embedding
// and for attn_v and ffn_down in the layers llama.cpp gives more bits (the first and last eighth,
// and every third between); then each matrix takes TensorConvertType's fallback where its rows
// are not whole super-blocks (for the 270m: exactly the mix of llama.cpp's files).
enum class QuantPreset : uint8_t { kNone, kQ4_K_M, kQ5_K_M };

struct ConvertOptions {
  DType type = DType::kBF16;  // with a preset: its base type (q4_K, q5_K)
  QuantPreset preset = QuantPreset::kNone;
  // general.name ("" = the Hugging Face directory's name, or the GGUF source's own name).
  std::string name;
  // Called after each block of rows with the tensor bytes written so far and in all.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Called before any tensor is written with each warning (also returned in ConvertResult).
  std::function<void(const std::string&)> warning;
  // A LoRA adapter merged into the projections before they are written or quantized:
  // W' = W + s B A, computed in float32 from the source row (fgemma convert --lora DIR[:SCALE]).
  std::optional<LoraSpec> lora;
};

struct ConvertResult {
  std::string path;
  DType type = DType::kBF16;
  uint64_t file_bytes = 0;
  size_t tensor_count = 0;
  std::string source_type;  // the source's weight type ("bf16", "q4_0", "mixed", ...)
  // A source whose matrices are quantized and differ from the target is dequantized and re-encoded:
  // the result cannot be more accurate than the source, which the warning says.
  std::vector<std::string> warnings;
};

// Writes `out_path` (through a temporary file renamed on success; nothing is left behind on failure).
// `source` is a Hugging Face model directory (config.json, safetensors, tokenizer.json, optionally
// tokenizer_config.json), a .safetensors file inside one, or a .gguf file. From Hugging Face, the
// tokenizer is required: it becomes the GGUF vocabulary. From GGUF, every metadata key is carried
// over in order, with general.file_type set to the new type; tensors other than the model's
// (rope_freqs) are dropped. Float source tensors are converted directly; quantized ones are
// dequantized to float32 first, unless already of the target type (then copied byte for byte).
// Errors: NotFound (source or tokenizer missing), IoError (output not writable), the loaders' errors.
Result<ConvertResult> ConvertToGguf(const std::string& source, const std::string& out_path, const ConvertOptions& options);

// Parses a target type: one of util/weight_types.h's names (InvalidArgument naming them otherwise).
Result<DType> ParseConvertType(const std::string& name);
// Sets options->type and options->preset from a type name or a preset name (q4_K_M, q5_K_M;
// case-insensitive).
Status ParseConvertTarget(const std::string& name, ConvertOptions* options);
// The preset's name ("q4_K_M"), or the type's when there is none.
std::string ConvertTargetName(DType type, QuantPreset preset);
// The type the preset gives tensor `spec` of a model of `num_layers` layers (before the fallback).
DType PresetTensorType(QuantPreset preset, DType type, const TensorSpec& spec, int num_layers);

// The type a matrix of `cols`-value rows is written in for target `type`: `type`, or for a K type
// whose 256-value super-blocks do not divide the rows llama.cpp's fallback (q4_K -> q5_0,
// q5_K -> q5_1, q6_K -> q8_0; FunctionGemma's 640-wide rows take it), with a warning.
DType TensorConvertType(DType type, size_t cols);

// llama.cpp's general.file_type (enum llama_ftype) for a file mostly of type `t` (the weight
// table's gguf_file_type).
uint32_t GgufFileType(DType t);
// ... or llama.cpp's for a preset (Q4_K_M 15, Q5_K_M 17).
uint32_t GgufFileType(DType t, QuantPreset preset);

}  // namespace fgemma
