#include "convert/convert.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "convert/convert_metadata.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/model.h"
#include "util/mapped_file.h"
#include "util/weight_types.h"

namespace fgemma {
namespace {

// Output bytes converted per write: small enough that the staging buffer never matters, large
// enough that the per-call overhead does not either.
constexpr size_t kBlockBytes = size_t{1} << 20;

struct Progress {
  const ConvertOptions& options;
  uint64_t done = 0;
  uint64_t total = 0;
  void Advance(uint64_t bytes) {
    done += bytes;
    if (options.progress) options.progress(done, total);
  }
};

// Streams one matrix into the writer, one block of rows at a time.
// With `lora`, each row gets the adapter's update (in float32) before it is encoded.
Status WriteMatrix(GgufWriter& w, const std::string& name, const TensorView& src, DType type, Progress& progress,
                   const LoraProjection* lora) {
  const size_t out_row = RowBytes(type, src.cols);
  const size_t rows_per_block = std::max<size_t>(1, kBlockBytes / std::max<size_t>(1, out_row));
  std::vector<float> row;
  std::vector<uint8_t> block;
  const bool copy = src.dtype == type && lora == nullptr;
  if (!copy) {
    row.resize(src.cols);
    block.resize(std::min(rows_per_block, src.rows) * out_row);
  }
  for (size_t r0 = 0; r0 < src.rows; r0 += rows_per_block) {
    const size_t n = std::min(rows_per_block, src.rows - r0);
    const uint8_t* in = src.row(r0);
    if (copy) {
      // Same type: the stored bytes are the answer (no round trip through float32).
      FGEMMA_RETURN_IF_ERROR(w.WriteTensorData(name, in, n * out_row));
    } else {
      for (size_t i = 0; i < n; ++i) {
        DequantizeRow(src, r0 + i, row.data());
        if (lora != nullptr) AddLoraRow(*lora, r0 + i, row.data());
        FGEMMA_RETURN_IF_ERROR(QuantizeRow(type, row.data(), src.cols, block.data() + i * out_row).WithContext(name));
      }
      FGEMMA_RETURN_IF_ERROR(w.WriteTensorData(name, block.data(), n * out_row));
    }
    ReleaseMappedPages(in, n * src.row_bytes());
    progress.Advance(n * out_row);
  }
  return Status::Ok();
}

std::vector<uint64_t> GgufDims(const TensorSpec& s) {
  return s.is_1d ? std::vector<uint64_t>{s.cols} : std::vector<uint64_t>{s.cols, s.rows};
}

std::string BaseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return std::filesystem::path(path).filename().string();
}

std::string ModelDir(const std::string& source) {
  if (IsDirectory(source)) return source;
  const std::string parent = std::filesystem::path(source).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Warnings about the source's quantized matrices that must be decoded and re-encoded.
std::vector<std::string> RequantizeWarnings(const Model& model, const std::vector<TensorSpec>& specs,
                                            const ConvertOptions& options) {
  const DType type = options.type;
  std::vector<std::string> from;
  for (const TensorSpec& s : specs) {
    const TensorView* m = model.Matrix(s);
    const DType target = TensorConvertType(PresetTensorType(options.preset, type, s, model.config().num_layers), s.cols);
    if (m == nullptr || !DTypeIsQuantized(m->dtype) || m->dtype == target) continue;
    const std::string t = DTypeName(m->dtype);
    if (std::find(from.begin(), from.end(), t) == from.end()) from.push_back(t);
  }
  std::vector<std::string> out;
  for (const std::string& t : from) {
    out.push_back("the source is " + t + ": its weights are dequantized and re-encoded as " + DTypeName(type) +
                  ", which cannot recover the precision " + t + " lost; convert from the original float weights when you can");
  }
  return out;
}

}  // namespace

DType TensorConvertType(DType type, size_t cols) {
  if (cols % DTypeBlockSize(type) == 0) return type;
  // llama.cpp's fallbacks for a K type on rows that are not whole super-blocks.
  switch (type) {
    case DType::kQ4_K: return DType::kQ5_0;
    case DType::kQ5_K: return DType::kQ5_1;
    case DType::kQ6_K: return DType::kQ8_0;
    default: return type;  // not reached for shapes that pass the config checks (multiples of 32)
  }
}

DType PresetTensorType(QuantPreset preset, DType type, const TensorSpec& spec, int num_layers) {
  if (preset == QuantPreset::kNone || spec.role == TensorRole::kNorm) return type;
  if (spec.role == TensorRole::kEmbedding) return DType::kQ6_K;  // the tied output head
  const bool more_bits_tensor = spec.gguf_name.ends_with(".attn_v.weight") || spec.gguf_name.ends_with(".ffn_down.weight");
  // llama.cpp's use_more_bits(i, n).
  const int i = spec.layer, n = num_layers;
  const bool more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
  return more_bits_tensor && more_bits ? DType::kQ6_K : type;
}

namespace {
struct PresetName {
  const char* name;
  QuantPreset preset;
  DType base;
  uint32_t file_type;
};
constexpr PresetName kPresets[] = {{"q4_K_M", QuantPreset::kQ4_K_M, DType::kQ4_K, 15},
                                   {"q5_K_M", QuantPreset::kQ5_K_M, DType::kQ5_K, 17}};
}  // namespace

Status ParseConvertTarget(const std::string& name, ConvertOptions* options) {
  for (const PresetName& p : kPresets) {
    if (name.size() == std::string_view(p.name).size() &&
        std::equal(name.begin(), name.end(), p.name, [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      options->type = p.base;
      options->preset = p.preset;
      return Status::Ok();
    }
  }
  auto t = DTypeFromName(name);
  if (!t.ok()) return InvalidArgument("unknown type '" + name + "' (expected " + WeightTypeNames() + ", or a preset: q4_K_M, q5_K_M)");
  options->type = *t;
  options->preset = QuantPreset::kNone;
  return Status::Ok();
}

std::string ConvertTargetName(DType type, QuantPreset preset) {
  for (const PresetName& p : kPresets) {
    if (p.preset == preset) return p.name;
  }
  return DTypeName(type);
}

uint32_t GgufFileType(DType t, QuantPreset preset) {
  for (const PresetName& p : kPresets) {
    if (p.preset == preset) return p.file_type;
  }
  return GgufFileType(t);
}

Result<DType> ParseConvertType(const std::string& name) {
  auto t = DTypeFromName(name);
  if (!t.ok()) return InvalidArgument("unknown type '" + name + "' (expected " + WeightTypeNames() + ")");
  return t;
}

uint32_t GgufFileType(DType t) { return WeightType(t).gguf_file_type; }

Result<ConvertResult> ConvertToGguf(const std::string& source, const std::string& out_path, const ConvertOptions& options) {
  if (!FileExists(source)) return NotFound(source + ": no such file or directory");
  FGEMMA_TRY(std::unique_ptr<Model> model, Model::Load(source, ModelLoadOptions{.prepare_for_kernels = false}));
  const ModelConfig& config = model->config();
  const bool from_gguf = source.ends_with(".gguf");  // as Model::Load decides
  // The adapter is read and checked before anything is written.
  std::shared_ptr<const LoraAdapter> lora;
  if (options.lora) {
    FGEMMA_TRY(lora, LoraAdapter::Load(*options.lora, config));
    FGEMMA_RETURN_IF_ERROR(lora->CheckFits(*model));
  }

  FGEMMA_TRY(GgufWriter w, GgufWriter::Create(out_path));
  if (from_gguf) {
    FGEMMA_TRY(GgufFile src, GgufFile::Open(source));
    FGEMMA_RETURN_IF_ERROR(CopyGgufMetadata(src, options.name, GgufFileType(options.type, options.preset), w));
  } else {
    const std::string dir = ModelDir(source);
    const std::string name = options.name.empty() ? BaseName(dir) : options.name;
    FGEMMA_RETURN_IF_ERROR(AddHfMetadata(config, dir, name, GgufFileType(options.type, options.preset), w));
  }

  const std::vector<TensorSpec> specs = TensorsInGgufOrder(config);
  ConvertResult result;
  result.path = out_path;
  result.type = options.type;
  result.source_type = model->weight_type_name();
  result.tensor_count = specs.size();
  result.warnings = RequantizeWarnings(*model, specs, options);
  if (lora && DTypeIsQuantized(model->embedding().dtype))
    result.warnings.push_back("the LoRA adapter is merged into dequantized " + std::string(DTypeName(model->embedding().dtype)) +
                              " weights; merge into the original float weights when you can");
  auto tensor_type = [&](const TensorSpec& s) {
    if (model->Norm(s) != nullptr) return DType::kF32;
    return TensorConvertType(PresetTensorType(options.preset, options.type, s, config.num_layers), s.cols);
  };
  size_t fallbacks = 0;
  for (const TensorSpec& s : specs) {
    const DType chosen = PresetTensorType(options.preset, options.type, s, config.num_layers);
    fallbacks += model->Norm(s) == nullptr && TensorConvertType(chosen, s.cols) != chosen;
  }
  if (fallbacks > 0) {
    result.warnings.push_back(std::to_string(fallbacks) +
                              " matrices have rows that are not a multiple of 256 values: their K type is written as "
                              "llama.cpp's fallback (q4_K as q5_0, q5_K as q5_1, q6_K as q8_0)");
  }
  if (options.warning) {
    for (const std::string& warning : result.warnings) options.warning(warning);
  }

  Progress progress{options};
  for (const TensorSpec& s : specs) {
    const DType type = tensor_type(s);
    FGEMMA_RETURN_IF_ERROR(w.DeclareTensor(s.gguf_name, type, GgufDims(s)));
    progress.total += s.rows * RowBytes(type, s.cols);
  }
  for (const TensorSpec& s : specs) {
    if (const std::vector<float>* norm = model->Norm(s)) {
      // Norms stay float32 and hold 1 + w (llama.cpp's gemma3 convention), whatever the target type.
      FGEMMA_RETURN_IF_ERROR(w.WriteTensorData(s.gguf_name, norm->data(), norm->size() * sizeof(float)));
      progress.Advance(norm->size() * sizeof(float));
    } else if (const TensorView* m = model->Matrix(s)) {
      FGEMMA_RETURN_IF_ERROR(WriteMatrix(w, s.gguf_name, *m, tensor_type(s), progress, lora ? lora->ForTensor(s) : nullptr));
    } else {
      return Internal("convert: tensor '" + s.gguf_name + "' has no source");
    }
  }
  FGEMMA_RETURN_IF_ERROR(w.Finish());
  std::error_code ec;
  result.file_bytes = std::filesystem::file_size(out_path, ec);
  if (ec) return IoError(out_path + ": cannot stat the written file: " + ec.message());
  return result;
}

}  // namespace fgemma
