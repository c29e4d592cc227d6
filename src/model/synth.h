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

}  // namespace fgemma
