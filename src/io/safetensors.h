// Safetensors checkpoints, memory-mapped: single files and sharded (model.safetensors.index.json).
//
// Layout: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the data section. Every offset, shape and dtype is validated against the file before any
// tensor is handed out, and tensors are returned as views into the mapping (no copies).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/mapped_file.h"
#include "util/file_replace.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;
  const std::string* file = nullptr;  // path of the file holding it (for error messages)
};

class SafetensorsCheckpoint {
 public:
  // Opens `path`: a .safetensors file, a model.safetensors.index.json, or a directory holding either.
  static Result<std::unique_ptr<SafetensorsCheckpoint>> Open(const std::string& path);
  // Parses one already-mapped file (exposed for tests and fuzzing).
  static Result<std::unique_ptr<SafetensorsCheckpoint>> FromFiles(std::vector<MappedFile> files);

  const SafetensorsTensor* Find(const std::string& name) const;
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  const std::vector<MappedFile>& files() const { return files_; }

 private:
  Status ParseFile(size_t file_index);
  std::vector<MappedFile> files_;
  std::map<std::string, SafetensorsTensor> tensors_;
};

// Parses the header of a safetensors image in memory (fuzzing entry point); returns tensor count.
Result<size_t> ValidateSafetensorsImage(const uint8_t* data, size_t size, const std::string& name);

// Streaming writer: declare every tensor, then write their bytes in declaration order.
class SafetensorsWriter {
 public:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<uint64_t> shape;
  };
  // Writes the header for `entries` to `path` (data offsets follow declaration order).
  static Result<std::unique_ptr<SafetensorsWriter>> Create(const std::string& path, std::vector<Entry> entries,
                                                           const std::map<std::string, std::string>& metadata);
  ~SafetensorsWriter();
  // Appends tensor bytes in declaration order; a tensor may arrive in several pieces, but a piece
  // never spans two tensors (so a size mismatch is caught at the tensor it belongs to).
  Status Append(const void* data, uint64_t bytes);
  Status Finish();

 private:
  SafetensorsWriter() = default;
  std::string path_;
  std::unique_ptr<FileReplacement> replacement_;  // a temporary beside path_, renamed by Finish
  std::FILE* out_ = nullptr;                       // replacement_'s stream
  std::vector<Entry> entries_;
  std::vector<uint64_t> sizes_;
  size_t next_ = 0;
  uint64_t written_in_current_ = 0;
};

}  // namespace fgemma
