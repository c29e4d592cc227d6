#include "model/synth.h"

#include <sys/stat.h>

#include <cerrno>
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

}  // namespace fgemma
