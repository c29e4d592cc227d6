#include "model/convert.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "util/weight_types.h"
#include "model/convert_metadata.h"
#include "model/model.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

// Output bytes converted per write: small enough that the staging buffer never matters, large
// enough that the per-call overhead does not either.
constexpr size_t kBlockBytes = size_t{1} << 20;

// Drops the whole pages inside [p, p + n) of a read-only file mapping from this process: they are
// re-read from the page cache if touched again, so this only lowers the resident set.
void ReleaseSourcePages(const void* p, size_t n) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

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
    ReleaseSourcePages(in, n * src.row_bytes());
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
std::vector<std::string> RequantizeWarnings(const Model& model, const std::vector<TensorSpec>& specs, DType type) {
  std::vector<std::string> from;
  for (const TensorSpec& s : specs) {
    const TensorView* m = model.Matrix(s);
    if (m == nullptr || !DTypeIsQuantized(m->dtype) || m->dtype == type) continue;
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

Result<DType> ParseConvertType(const std::string& name) {
  auto t = DTypeFromName(name);
  if (!t.ok()) return InvalidArgument("unknown type '" + name + "' (expected f32, f16, bf16, q8_0 or q4_0)");
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
    FGEMMA_RETURN_IF_ERROR(CopyGgufMetadata(src, options.name, options.type, w));
  } else {
    const std::string dir = ModelDir(source);
    const std::string name = options.name.empty() ? BaseName(dir) : options.name;
    FGEMMA_RETURN_IF_ERROR(AddHfMetadata(config, dir, name, options.type, w));
  }

  const std::vector<TensorSpec> specs = TensorsInGgufOrder(config);
  ConvertResult result;
  result.path = out_path;
  result.type = options.type;
  result.source_type = model->weight_type_name();
  result.tensor_count = specs.size();
  result.warnings = RequantizeWarnings(*model, specs, options.type);
  if (lora && DTypeIsQuantized(model->embedding().dtype))
    result.warnings.push_back("the LoRA adapter is merged into dequantized " + std::string(DTypeName(model->embedding().dtype)) +
                              " weights; merge into the original float weights when you can");
  if (options.warning) {
    for (const std::string& warning : result.warnings) options.warning(warning);
  }

  Progress progress{options};
  for (const TensorSpec& s : specs) {
    const bool is_norm = model->Norm(s) != nullptr;
    const DType type = is_norm ? DType::kF32 : options.type;
    FGEMMA_RETURN_IF_ERROR(w.DeclareTensor(s.gguf_name, type, GgufDims(s)));
    progress.total += s.rows * RowBytes(type, s.cols);
  }
  for (const TensorSpec& s : specs) {
    if (const std::vector<float>* norm = model->Norm(s)) {
      // Norms stay float32 and hold 1 + w (llama.cpp's gemma3 convention), whatever the target type.
      FGEMMA_RETURN_IF_ERROR(w.WriteTensorData(s.gguf_name, norm->data(), norm->size() * sizeof(float)));
      progress.Advance(norm->size() * sizeof(float));
    } else if (const TensorView* m = model->Matrix(s)) {
      FGEMMA_RETURN_IF_ERROR(WriteMatrix(w, s.gguf_name, *m, options.type, progress, lora ? lora->ForTensor(s) : nullptr));
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
