#include "model/synth.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "io/safetensors.h"
#include "model/tensor_list.h"
#include "util/float_types.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {

uint64_t Fnv1a64(const std::string& bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

float SynthValue(uint64_t name_hash, uint64_t seed, uint64_t index, double amplitude) {
  uint64_t z = name_hash + seed * 0x9E3779B97F4A7C15ull + (index + 1) * 0xD1B54A32D192ED03ull;
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0;
  return static_cast<float>(u * amplitude);
}

Status WriteSynthCheckpoint(const ModelConfig& config, uint64_t seed, DType dtype, const std::string& dir) {
  if (dtype != DType::kF32 && dtype != DType::kBF16) return InvalidArgument("synth writes f32 or bf16, not " + std::string(DTypeName(dtype)));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return IoError(dir + ": cannot create directory: " + std::strerror(errno));

  std::vector<TensorSpec> specs;
  ForEachTensor(config, [&](const TensorSpec& s) { specs.push_back(s); });
  std::vector<SafetensorsWriter::Entry> entries;
  for (const auto& s : specs) {
    std::vector<uint64_t> shape = s.is_1d ? std::vector<uint64_t>{s.cols} : std::vector<uint64_t>{s.rows, s.cols};
    entries.push_back({s.hf_name, dtype, shape});
  }
  const std::string model_path = dir + "/model.safetensors";
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"fgemma_synth", config.name + " seed " + std::to_string(seed)}};
  FGEMMA_TRY(auto writer, SafetensorsWriter::Create(model_path, entries, meta));

  // Generate one row block at a time so a 270m checkpoint never sits in memory whole.
  constexpr uint64_t kChunk = 1 << 20;
  std::vector<float> f32(kChunk);
  std::vector<uint16_t> b16(kChunk);
  for (const auto& s : specs) {
    const uint64_t hash = Fnv1a64(s.hf_name);
    const uint64_t count = s.rows * s.cols;
    for (uint64_t start = 0; start < count; start += kChunk) {
      const uint64_t n = std::min(kChunk, count - start);
      for (uint64_t i = 0; i < n; ++i) f32[i] = SynthValue(hash, seed, start + i, s.synth_amplitude);
      if (dtype == DType::kF32) {
        FGEMMA_RETURN_IF_ERROR(writer->Append(f32.data(), n * 4));
      } else {
        for (uint64_t i = 0; i < n; ++i) b16[i] = F32ToBf16(f32[i]);
        FGEMMA_RETURN_IF_ERROR(writer->Append(b16.data(), n * 2));
      }
    }
  }
  FGEMMA_RETURN_IF_ERROR(writer->Finish());
  return WriteStringToFile(dir + "/config.json", ConfigToHfJson(config).dump(2) + "\n");
}

Status WriteSynthLora(const ModelConfig& config, uint64_t seed, size_t rank, const std::string& dir) {
  if (rank == 0) return InvalidArgument("synth --lora-rank must be positive");
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return IoError(dir + ": cannot create directory: " + std::strerror(errno));
  // The projections as ForEachTensor names them ("model.layers.N.self_attn.q_proj.weight"), each
  // with an A [rank, in] and a B [out, rank] under PEFT's names.
  struct Matrix {
    std::string name;
    uint64_t rows, cols;
    double amplitude;
  };
  std::vector<Matrix> matrices;
  ForEachTensor(config, [&](const TensorSpec& s) {
    if (s.role != TensorRole::kProjection) return;
    const std::string stem = "base_model.model." + s.hf_name.substr(0, s.hf_name.size() - std::string(".weight").size());
    matrices.push_back({stem + ".lora_A.weight", rank, s.cols, 1.0 / std::sqrt(static_cast<double>(s.cols))});
    matrices.push_back({stem + ".lora_B.weight", s.rows, rank, 0.1 * s.synth_amplitude});
  });
  std::vector<SafetensorsWriter::Entry> entries;
  for (const Matrix& m : matrices) entries.push_back({m.name, DType::kF32, {m.rows, m.cols}});
  FGEMMA_TRY(auto writer, SafetensorsWriter::Create(dir + "/adapter_model.safetensors", entries, {{"format", "pt"}}));
  std::vector<float> values;
  for (const Matrix& m : matrices) {
    values.resize(m.rows * m.cols);
    const uint64_t hash = Fnv1a64(m.name);
    for (uint64_t i = 0; i < values.size(); ++i) values[i] = SynthValue(hash, seed, i, m.amplitude);
    FGEMMA_RETURN_IF_ERROR(writer->Append(values.data(), values.size() * 4));
  }
  FGEMMA_RETURN_IF_ERROR(writer->Finish());
  Json adapter_config = {{"peft_type", "LORA"},
                         {"task_type", "CAUSAL_LM"},
                         {"r", rank},
                         {"lora_alpha", 2 * rank},
                         {"target_modules", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
                         {"use_rslora", false},
                         {"use_dora", false},
                         {"bias", "none"},
                         {"modules_to_save", nullptr},
                         {"base_model_name_or_path", "synth-" + config.name}};
  return WriteStringToFile(dir + "/adapter_config.json", adapter_config.dump(2) + "\n");
}

}  // namespace fgemma
