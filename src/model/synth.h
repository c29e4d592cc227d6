// SYNTH.md: deterministic synthetic Gemma 3 checkpoints, bit for bit.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

uint64_t Fnv1a64(const std::string& bytes);

// Element `index` of tensor `name` for `seed`, as float32 (SYNTH.md "Values").
float SynthValue(uint64_t name_hash, uint64_t seed, uint64_t index, double amplitude);

// Writes `dir`/config.json and `dir`/model.safetensors (f32 or bf16), streaming tensor by tensor.
Status WriteSynthCheckpoint(const ModelConfig& config, uint64_t seed, DType dtype, const std::string& dir);

// Writes a PEFT LoRA adapter for `config` to `dir` (adapter_config.json + adapter_model.safetensors,
// float32): rank `rank`, lora_alpha 2 * rank, all seven projections of every layer, values from
// SynthValue (A of amplitude 1/sqrt(in), B small). For benchmarks and tests of the adapter's cost;
// its effect on outputs is noise like the synthetic weights'.
Status WriteSynthLora(const ModelConfig& config, uint64_t seed, size_t rank, const std::string& dir);

}  // namespace fgemma
