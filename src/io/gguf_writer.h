// Streaming GGUF v3 writer.
//
// Usage: add metadata, declare every tensor (name, type, shape), then write the tensors' bytes in
// declaration order -- each in one call or in several (row by row), so a converter never holds more
// than one tensor (or one row) in memory -- and Finish(). The header is written when the first tensor
// byte arrives; data offsets follow from the declared shapes. Each tensor's data starts on the
// alignment (gguf_key::kAlignment's default 32, or `general.alignment` when that key is added) and is zero-padded to it, the layout
// llama.cpp's and gguf-py's writers produce. Output goes to a fresh temporary file beside `path`
// (util/file_replace.h: created exclusively, never through a link), which Finish() flushes, syncs and
// renames over `path` (which must be absent or a regular file); a writer destroyed before Finish()
// removes it.
//
// Any failure is sticky: later calls return the first error.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_keys.h"
#include "util/file_replace.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

class GgufWriter {
 public:
  static Result<GgufWriter> Create(const std::string& path);

  GgufWriter(GgufWriter&& other) noexcept;
  GgufWriter& operator=(GgufWriter&& other) noexcept;
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;
  ~GgufWriter();

  // ---- metadata (before the first WriteTensorData); keys must be unique ----
  Status AddU8(std::string_view key, uint8_t v);
  Status AddI8(std::string_view key, int8_t v);
  Status AddU16(std::string_view key, uint16_t v);
  Status AddI16(std::string_view key, int16_t v);
  Status AddU32(std::string_view key, uint32_t v);  // gguf_key::kAlignment also sets the alignment
  Status AddI32(std::string_view key, int32_t v);
  Status AddU64(std::string_view key, uint64_t v);
  Status AddI64(std::string_view key, int64_t v);
  Status AddF32(std::string_view key, float v);
  Status AddF64(std::string_view key, double v);
  Status AddBool(std::string_view key, bool v);
  Status AddString(std::string_view key, std::string_view v);
  // An array of `count` fixed-size elements of `element_type` (not string or array), little-endian.
  Status AddArray(std::string_view key, GgufType element_type, const void* elements, uint64_t count);
  Status AddStringArray(std::string_view key, const std::vector<std::string>& values);
  Status AddF32Array(std::string_view key, const std::vector<float>& values);
  Status AddI32Array(std::string_view key, const std::vector<int32_t>& values);
  // Copies a value read by GgufFile (any type), e.g. to rewrite a file's metadata.
  Status AddValue(std::string_view key, const GgufValue& value);

  // ---- tensors ----
  // `ne` in ggml order (ne[0] = row length), 1 to 4 dims; ne[0] must be a multiple of the type's
  // block size. Names must be unique and shorter than 64 bytes (llama.cpp's limit).
  Status DeclareTensor(std::string_view name, uint32_t ggml_type, const std::vector<uint64_t>& ne);
  Status DeclareTensor(std::string_view name, DType type, const std::vector<uint64_t>& ne);
  // Appends `bytes` of tensor `name`'s data, which must be the first tensor not yet complete.
  Status WriteTensorData(std::string_view name, const void* data, size_t bytes);
  // Writes what is missing of the header (a file may have no tensors), checks that every tensor is
  // complete, syncs and renames the temporary file over the destination.
  Status Finish();

  const std::string& path() const { return path_; }
  uint32_t alignment() const { return alignment_; }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t ggml_type = 0;
    uint64_t offset = 0;
    uint64_t n_bytes = 0;
  };

  GgufWriter() = default;
  Status CheckMetadataOpen(std::string_view key);
  void PutKey(std::string_view key, GgufType type);
  Status AddScalar(std::string_view key, GgufType type, uint64_t bits);
  Status Fail(Status s);
  Status Write(const void* data, size_t n);
  Status WritePadding(uint64_t n);
  Status WriteHeader();
  void Abandon();

  std::string path_;
  std::unique_ptr<FileReplacement> out_;  // the temporary beside path_ (util/file_replace.h)
  std::FILE* file_ = nullptr;             // out_'s stream
  Status error_;        // first failure (sticky)
  bool finished_ = false;
  bool header_written_ = false;
  uint32_t alignment_ = gguf_key::kAlignment.default_u32();
  uint64_t kv_count_ = 0;
  std::string kv_bytes_;  // serialized metadata pairs
  std::unordered_set<std::string> keys_;
  std::vector<Tensor> tensors_;
  std::unordered_set<std::string> tensor_names_;
  uint64_t data_size_ = 0;       // sum of padded tensor sizes declared so far
  size_t current_ = 0;           // first tensor not yet complete
  uint64_t current_written_ = 0; // bytes of it written
};

}  // namespace fgemma
