// GGUF reader (format versions 2 and 3) over a memory-mapped file.
//
// Layout (all little-endian):
//   "GGUF" | u32 version | u64 tensor_count | u64 metadata_kv_count
//   metadata_kv_count x { string key | u32 value_type | value }
//   tensor_count      x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
//   padding to `general.alignment` (default 32) | tensor data (each offset relative to this point)
// where string = u64 byte length + bytes (no terminator) and an array value = u32 element type +
// u64 count + elements.
//
// Everything is validated when the file is opened: each count, length and offset is checked against
// the file size in 64-bit arithmetic before it is narrowed to size_t (32-bit builds), so a malformed
// file yields a Status that names the field and its byte offset instead of a crash. Tensor data is
// never copied: TensorView points into the mapping, and string values are views of it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/mapped_file.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

// Metadata value types (GGUF spec numbering).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "u32", "string", "array", ...; "type#N" for an unknown id.
std::string GgufTypeName(GgufType t);
// Bytes of one value of a fixed-size type (0 for string, array or an unknown id).
size_t GgufTypeSize(GgufType t);

// ggml tensor type ids as stored in GGUF tensor infos (from util/weight_types.h's table).
namespace ggml_type {
inline constexpr uint32_t kF32 = WeightType(DType::kF32).ggml_type;
inline constexpr uint32_t kF16 = WeightType(DType::kF16).ggml_type;
inline constexpr uint32_t kQ4_0 = WeightType(DType::kQ4_0).ggml_type;
inline constexpr uint32_t kQ8_0 = WeightType(DType::kQ8_0).ggml_type;
inline constexpr uint32_t kBF16 = WeightType(DType::kBF16).ggml_type;
}  // namespace ggml_type

// ggml's name of a tensor type id ("Q8_0", "Q4_K", ...); nullptr when the id is unknown.
const char* GgmlTypeName(uint32_t type);
// Values per block and bytes per block of a known ggml type; false when the id is unknown.
bool GgmlTypeLayout(uint32_t type, uint32_t* block_size, uint32_t* block_bytes);
// The fgemma DType of a ggml type (F32, F16, BF16, Q8_0, Q4_0); Unsupported for any other type.
Result<DType> DTypeFromGgmlType(uint32_t type);
uint32_t GgmlTypeFromDType(DType t);

// One metadata value. Strings are views into the file; numeric arrays are read from the file on
// request (GgufFile's typed getters), so opening a file with a 262k-entry vocabulary copies nothing
// but the views of its strings.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  uint64_t offset = 0;  // file offset of the value (after its u32 type)

  // Scalars: the value's bytes, zero-extended (floats keep their IEEE bits; bool is 0 or 1).
  uint64_t scalar_bits = 0;
  // kString
  std::string_view string;
  // kArray
  GgufType array_type = GgufType::kUint8;
  uint64_t array_count = 0;
  const uint8_t* array_data = nullptr;          // first element, for fixed-size element types
  std::vector<std::string_view> array_strings;  // elements, for arrays of strings

  bool IsInteger() const;  // u8..u64, i8..i64 (scalar)
  bool IsFloat() const;    // f32, f64 (scalar)
  // Scalar accessors; the caller checks the type (GgufFile's getters do).
  int64_t AsSigned() const;     // sign-extends signed types
  double AsDouble() const;      // f32 / f64
};

struct GgufKeyValue {
  std::string_view key;
  uint64_t offset = 0;  // file offset of the key
  GgufValue value;
};

struct GgufTensorInfo {
  std::string_view name;
  uint32_t n_dims = 0;
  std::array<uint64_t, 4> ne = {1, 1, 1, 1};  // ggml order: ne[0] is the row length; unused dims 1
  uint32_t ggml_type = 0;
  uint64_t offset = 0;       // of the data, relative to the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t info_offset = 0;  // file offset of this tensor info record (for messages)

  uint64_t rows() const { return ne[1] * ne[2] * ne[3]; }
};

// Special token ids and vocabulary from the `tokenizer.*` keys, as plain containers.
struct GgufTokenizer {
  std::string model;                 // tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (BPE), ...
  std::string pre;                   // tokenizer.ggml.pre (empty when absent)
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<float> scores;         // tokenizer.ggml.scores (empty when absent)
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty when absent)
  std::vector<std::string> merges;   // tokenizer.ggml.merges (empty when absent)
  // -1 when the key is absent.
  int32_t bos_id = -1;      // tokenizer.ggml.bos_token_id
  int32_t eos_id = -1;      // tokenizer.ggml.eos_token_id
  int32_t unk_id = -1;      // tokenizer.ggml.unknown_token_id
  int32_t pad_id = -1;      // tokenizer.ggml.padding_token_id
  int32_t sep_id = -1;      // tokenizer.ggml.separator_token_id
  int32_t eot_id = -1;      // tokenizer.ggml.eot_token_id
  int32_t eom_id = -1;      // tokenizer.ggml.eom_token_id
  int32_t mask_id = -1;     // tokenizer.ggml.mask_token_id
  std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;           // tokenizer.ggml.add_eos_token
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix
  std::string chat_template;             // tokenizer.chat_template (empty when absent)
};

class GgufFile {
 public:
  GgufFile() = default;
  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  // Maps and validates `path`.
  static Result<GgufFile> Open(const std::string& path);
  // Validates a GGUF image in memory. The bytes are not copied and must outlive the result;
  // `name` stands for the file in error messages.
  static Result<GgufFile> FromMemory(const uint8_t* data, size_t size, std::string name = "<memory>");
  // Files parsed by Open and FromMemory in this process so far: a file's metadata is large (a
  // 262k-token vocabulary), so loaders open it once and share it; tests use this to check that.
  static uint64_t ParseCount();

  const std::string& name() const { return name_; }  // the path, or FromMemory's name
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  const uint8_t* file_data() const { return data_; }
  uint64_t file_size() const { return size_; }

  // ---- metadata ----
  const std::vector<GgufKeyValue>& metadata() const { return kvs_; }  // in file order
  const GgufValue* Find(std::string_view key) const;                  // nullptr when absent
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // Typed getters. Errors: NotFound "metadata key 'k' is missing"; CorruptFile "... has the wrong
  // type: string, expected an integer (u32)"; OutOfRange when an integer does not fit. Integer
  // getters accept any integer type whose value fits (u8..i64); float getters accept f32 and f64
  // (GetF32 narrows an f64); array getters convert element-wise the same way.
  Result<uint32_t> GetU32(std::string_view key) const;
  Result<int32_t> GetI32(std::string_view key) const;
  Result<uint64_t> GetU64(std::string_view key) const;
  Result<int64_t> GetI64(std::string_view key) const;
  Result<float> GetF32(std::string_view key) const;
  Result<double> GetF64(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::string> GetString(std::string_view key) const;
  Result<std::vector<std::string>> GetStringArray(std::string_view key) const;
  Result<std::vector<float>> GetF32Array(std::string_view key) const;    // f32 or f64 elements
  Result<std::vector<int32_t>> GetI32Array(std::string_view key) const;  // any integer elements that fit
  Result<std::vector<uint32_t>> GetU32Array(std::string_view key) const;

  Result<std::string> Architecture() const;  // general.architecture
  // Reads the tokenizer.* keys (tokens required; lengths of scores/token_type checked against it,
  // special ids checked to be in the vocabulary).
  Result<GgufTokenizer> ReadTokenizer() const;

  // ---- tensors ----
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // in file order
  const GgufTensorInfo* FindTensor(std::string_view name) const;          // nullptr when absent
  // The tensor's bytes (t.n_bytes of them; checked to lie inside the file when it was opened).
  const uint8_t* TensorData(const GgufTensorInfo& t) const {
    return data_ + static_cast<size_t>(data_offset_ + t.offset);
  }
  // A [rows = ne[1]*ne[2]*ne[3], cols = ne[0]] view into the mapping. NotFound for an unknown name,
  // Unsupported for ggml types fgemma has no DType for (Q4_K, ...).
  Result<TensorView> GetTensorView(std::string_view name) const;
  Result<TensorView> GetTensorView(const GgufTensorInfo& t) const;

 private:
  friend class GgufParser;
  std::string name_;
  MappedFile mapping_;  // empty for FromMemory
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> kvs_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

// Fuzzing entry point: parses and validates a GGUF image, then exercises every getter on it.
Status ParseGgufFromMemory(const uint8_t* data, size_t size);

}  // namespace fgemma
