#include "io/gguf.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>

#include "io/gguf_internal.h"
#include "io/gguf_keys.h"

namespace fgemma {

using gguf_internal::Quoted;

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian; big-endian hosts are not supported");

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

struct GgmlTypeRow {
  uint32_t id;
  const char* name;
  uint32_t block_size;
  uint32_t block_bytes;
};

// ggml's types that fgemma cannot compute with, so that their tensors are still sized and named in
// validation and messages (the supported ones are util/weight_types.h's table; ids 4, 5 and 31-33,
// 36-38 were retired and are unknown here).
constexpr GgmlTypeRow kForeignGgmlTypes[] = {
    {9, "Q8_1", 32, 36},       {10, "Q2_K", 256, 84},     {11, "Q3_K", 256, 110},  {15, "Q8_K", 256, 292},
    {16, "IQ2_XXS", 256, 66},  {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},    {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},    {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},        {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},         {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
    {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},    {39, "MXFP4", 32, 17},
};

// The row of a ggml type id, from the weight table or the foreign list; false when unknown.
bool FindGgmlType(uint32_t id, GgmlTypeRow* out) {
  if (const WeightTypeInfo* w = WeightTypeByGgml(id)) {
    *out = {w->ggml_type, w->ggml_name, static_cast<uint32_t>(w->block_size), static_cast<uint32_t>(w->block_bytes)};
    return true;
  }
  for (const auto& row : kForeignGgmlTypes) {
    if (row.id == id) {
      *out = row;
      return true;
    }
  }
  return false;
}

bool IsSignedInteger(GgufType t) {
  return t == GgufType::kInt8 || t == GgufType::kInt16 || t == GgufType::kInt32 || t == GgufType::kInt64;
}
bool IsUnsignedInteger(GgufType t) {
  return t == GgufType::kUint8 || t == GgufType::kUint16 || t == GgufType::kUint32 || t == GgufType::kUint64;
}
bool IsIntegerType(GgufType t) { return IsSignedInteger(t) || IsUnsignedInteger(t); }
bool IsFloatType(GgufType t) { return t == GgufType::kFloat32 || t == GgufType::kFloat64; }
bool IsKnownType(GgufType t) { return static_cast<uint32_t>(t) <= static_cast<uint32_t>(GgufType::kFloat64); }

// Reads one fixed-size value at p, zero-extended to 64 bits.
uint64_t LoadBits(const uint8_t* p, size_t n) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, n);  // little-endian host: low bytes first
  return bits;
}

int64_t SignExtend(uint64_t bits, GgufType t) {
  switch (t) {
    case GgufType::kInt8: return static_cast<int8_t>(bits);
    case GgufType::kInt16: return static_cast<int16_t>(bits);
    case GgufType::kInt32: return static_cast<int32_t>(bits);
    default: return static_cast<int64_t>(bits);
  }
}

double BitsToDouble(uint64_t bits, GgufType t) {
  if (t == GgufType::kFloat32) {
    const uint32_t b = static_cast<uint32_t>(bits);
    return static_cast<double>(std::bit_cast<float>(b));
  }
  return std::bit_cast<double>(bits);
}

// Integer `bits` of type `t` converted to T when the value fits.
template <typename T>
bool IntegerFits(uint64_t bits, GgufType t, T* out) {
  if (IsSignedInteger(t)) {
    const int64_t v = SignExtend(bits, t);
    if (v < 0) {
      if constexpr (std::is_signed_v<T>) {
        if (v < static_cast<int64_t>(std::numeric_limits<T>::min())) return false;
        *out = static_cast<T>(v);
        return true;
      } else {
        return false;
      }
    }
    bits = static_cast<uint64_t>(v);
  }
  if (bits > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
  *out = static_cast<T>(bits);
  return true;
}

}  // namespace

std::string GgufTypeName(GgufType t) {
  switch (t) {
    case GgufType::kUint8: return "u8";
    case GgufType::kInt8: return "i8";
    case GgufType::kUint16: return "u16";
    case GgufType::kInt16: return "i16";
    case GgufType::kUint32: return "u32";
    case GgufType::kInt32: return "i32";
    case GgufType::kFloat32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "u64";
    case GgufType::kInt64: return "i64";
    case GgufType::kFloat64: return "f64";
  }
  return "type#" + std::to_string(static_cast<uint32_t>(t));
}

size_t GgufTypeSize(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool: return 1;
    case GgufType::kUint16:
    case GgufType::kInt16: return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32: return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64: return 8;
    case GgufType::kString:
    case GgufType::kArray: return 0;
  }
  return 0;
}

const char* GgmlTypeName(uint32_t type) {
  GgmlTypeRow row;
  return FindGgmlType(type, &row) ? row.name : nullptr;
}

bool GgmlTypeLayout(uint32_t type, uint32_t* block_size, uint32_t* block_bytes) {
  GgmlTypeRow row;
  if (!FindGgmlType(type, &row)) return false;
  *block_size = row.block_size;
  *block_bytes = row.block_bytes;
  return true;
}

Result<DType> DTypeFromGgmlType(uint32_t type) {
  if (const WeightTypeInfo* w = WeightTypeByGgml(type)) return w->dtype;
  std::string supported;
  for (const WeightTypeInfo& w : kWeightTypes) supported += (supported.empty() ? "" : ", ") + std::string(w.ggml_name);
  const char* name = GgmlTypeName(type);
  return Unsupported("ggml tensor type " + (name ? std::string(name) : "#" + std::to_string(type)) +
                     " is not supported (supported: " + supported + ")");
}

uint32_t GgmlTypeFromDType(DType t) { return WeightType(t).ggml_type; }

bool GgufValue::IsInteger() const { return IsIntegerType(type); }
bool GgufValue::IsFloat() const { return IsFloatType(type); }
int64_t GgufValue::AsSigned() const { return SignExtend(scalar_bits, type); }
double GgufValue::AsDouble() const { return BitsToDouble(scalar_bits, type); }

// ---------------------------------------------------------------------------------------------
// Parser

class GgufParser {
 public:
  explicit GgufParser(GgufFile* f) : f_(f), data_(f->data_), size_(f->size_) {}

  Status Parse() {
    FGEMMA_RETURN_IF_ERROR(ParseHeader());
    FGEMMA_RETURN_IF_ERROR(ParseMetadata());
    FGEMMA_RETURN_IF_ERROR(ParseAlignment());
    FGEMMA_RETURN_IF_ERROR(ParseTensorInfos());
    return CheckTensorData();
  }

 private:
  // "<file>: <field> at offset N: <what>"
  Status Corrupt(const std::string& field, uint64_t offset, const std::string& what) const {
    return CorruptFile(f_->name_ + ": " + field + " at offset " + std::to_string(offset) + ": " + what);
  }

  uint64_t Remaining() const { return size_ - pos_; }

  Status Need(uint64_t n, const std::string& field) const {
    if (n > Remaining()) {
      return Corrupt(field, pos_,
                     "file truncated: needs " + std::to_string(n) + " bytes but only " + std::to_string(Remaining()) +
                         " remain (file size " + std::to_string(size_) + ")");
    }
    return Status::Ok();
  }

  const uint8_t* Here() const { return data_ + static_cast<size_t>(pos_); }

  Status ReadU32(const std::string& field, uint32_t* out) {
    FGEMMA_RETURN_IF_ERROR(Need(4, field));
    *out = static_cast<uint32_t>(LoadBits(Here(), 4));
    pos_ += 4;
    return Status::Ok();
  }

  Status ReadU64(const std::string& field, uint64_t* out) {
    FGEMMA_RETURN_IF_ERROR(Need(8, field));
    *out = LoadBits(Here(), 8);
    pos_ += 8;
    return Status::Ok();
  }

  // A u64 length followed by that many bytes. Returns false, consuming nothing, when either runs
  // past the end of the file (StringError then describes why).
  bool TryReadString(std::string_view* out) {
    if (Remaining() < 8) return false;
    const uint64_t len = LoadBits(Here(), 8);
    if (len > Remaining() - 8) return false;
    *out = std::string_view(reinterpret_cast<const char*>(Here() + 8), static_cast<size_t>(len));
    pos_ += 8 + len;
    return true;
  }

  Status StringError(const std::string& field) const {
    if (Remaining() < 8) return Need(8, field + " length");
    return Corrupt(field, pos_,
                   "string length " + std::to_string(LoadBits(Here(), 8)) + " runs past the end of the file (" +
                       std::to_string(Remaining() - 8) + " bytes remain after the length, file size " +
                       std::to_string(size_) + ")");
  }

  Status ReadString(const std::string& field, std::string_view* out) {
    return TryReadString(out) ? Status::Ok() : StringError(field);
  }

  Status ParseHeader() {
    if (size_ < 4) return Corrupt("magic", 0, "file truncated: " + std::to_string(size_) + " bytes is too short for a GGUF header");
    uint32_t magic = 0;
    FGEMMA_RETURN_IF_ERROR(ReadU32("magic", &magic));
    if (magic != kMagic) {
      std::string got;
      for (int i = 0; i < 4; ++i) {
        const unsigned char c = data_[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
          got.push_back(static_cast<char>(c));
        } else {
          static const char kHex[] = "0123456789abcdef";
          got += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
        }
      }
      return Corrupt("magic", 0, "expected \"GGUF\", found \"" + got + "\"; not a GGUF file");
    }
    FGEMMA_RETURN_IF_ERROR(ReadU32("version", &f_->version_));
    if (f_->version_ != 2 && f_->version_ != 3) {
      std::string hint;
      if (f_->version_ == 1) hint = " (GGUF v1 used 32-bit counts; re-convert the model)";
      if (f_->version_ >= 0x01000000 && (f_->version_ & 0xffff) == 0) hint = " (looks like a big-endian GGUF file)";
      return Unsupported(f_->name_ + ": version at offset 4: GGUF version " + std::to_string(f_->version_) +
                         " is not supported (supported: 2, 3)" + hint);
    }
    const uint64_t tensor_count_at = pos_;
    FGEMMA_RETURN_IF_ERROR(ReadU64("tensor_count", &tensor_count_));
    const uint64_t kv_count_at = pos_;
    FGEMMA_RETURN_IF_ERROR(ReadU64("metadata_kv_count", &kv_count_));
    // Each metadata pair takes at least 13 bytes (key length, type, 1-byte value), each tensor info
    // at least 24 (name length, n_dims, type, offset).
    if (kv_count_ > Remaining() / 13) {
      return Corrupt("metadata_kv_count", kv_count_at,
                     std::to_string(kv_count_) + " key-value pairs cannot fit in the " + std::to_string(Remaining()) +
                         " bytes that follow the header");
    }
    if (tensor_count_ > (Remaining() - kv_count_ * 13) / 24) {
      return Corrupt("tensor_count", tensor_count_at,
                     std::to_string(tensor_count_) + " tensors cannot fit in the " + std::to_string(Remaining()) +
                         " bytes that follow the header");
    }
    return Status::Ok();
  }

  Status ParseMetadata() {
    f_->kvs_.reserve(static_cast<size_t>(kv_count_));
    for (uint64_t i = 0; i < kv_count_; ++i) {
      GgufKeyValue kv;
      kv.offset = pos_;
      FGEMMA_RETURN_IF_ERROR(ReadString("metadata key #" + std::to_string(i), &kv.key));
      const std::string field = "metadata " + Quoted(kv.key);
      uint32_t type = 0;
      const uint64_t type_at = pos_;
      FGEMMA_RETURN_IF_ERROR(ReadU32(field + " value type", &type));
      kv.value.type = static_cast<GgufType>(type);
      if (!IsKnownType(kv.value.type)) {
        return Corrupt(field + " value type", type_at, "unknown metadata value type " + std::to_string(type) + " (valid: 0..12)");
      }
      FGEMMA_RETURN_IF_ERROR(ReadValue(field, &kv.value));
      auto [it, inserted] = f_->kv_index_.emplace(kv.key, f_->kvs_.size());
      if (!inserted) {
        return Corrupt("metadata key", kv.offset,
                       "duplicate key " + Quoted(kv.key) + " (first defined at offset " +
                           std::to_string(f_->kvs_[it->second].offset) + ")");
      }
      f_->kvs_.push_back(std::move(kv));
    }
    return Status::Ok();
  }

  Status ReadValue(const std::string& field, GgufValue* v) {
    v->offset = pos_;
    if (v->type == GgufType::kString) return ReadString(field + " value", &v->string);
    if (v->type != GgufType::kArray) {
      const size_t n = GgufTypeSize(v->type);
      FGEMMA_RETURN_IF_ERROR(Need(n, field + " value"));
      v->scalar_bits = LoadBits(Here(), n);
      if (v->type == GgufType::kBool) v->scalar_bits = v->scalar_bits != 0;
      pos_ += n;
      return Status::Ok();
    }
    uint32_t elem = 0;
    const uint64_t elem_at = pos_;
    FGEMMA_RETURN_IF_ERROR(ReadU32(field + " array element type", &elem));
    v->array_type = static_cast<GgufType>(elem);
    if (v->array_type == GgufType::kArray) {
      return Unsupported(f_->name_ + ": " + field + " array element type at offset " + std::to_string(elem_at) +
                         ": arrays of arrays are not supported");
    }
    if (!IsKnownType(v->array_type)) {
      return Corrupt(field + " array element type", elem_at,
                     "unknown metadata value type " + std::to_string(elem) + " (valid: 0..12)");
    }
    const uint64_t count_at = pos_;
    FGEMMA_RETURN_IF_ERROR(ReadU64(field + " array length", &v->array_count));
    const uint64_t min_elem_bytes = v->array_type == GgufType::kString ? 8 : GgufTypeSize(v->array_type);
    if (v->array_count > Remaining() / min_elem_bytes) {
      return Corrupt(field + " array length", count_at,
                     std::to_string(v->array_count) + " elements of type " + GgufTypeName(v->array_type) +
                         " run past the end of the file (" + std::to_string(Remaining()) + " bytes remain)");
    }
    if (v->array_type != GgufType::kString) {
      v->array_data = Here();
      pos_ += v->array_count * min_elem_bytes;
      return Status::Ok();
    }
    v->array_strings.reserve(static_cast<size_t>(v->array_count));
    for (uint64_t i = 0; i < v->array_count; ++i) {
      std::string_view s;
      if (!TryReadString(&s)) return StringError(field + " element " + std::to_string(i));
      v->array_strings.push_back(s);
    }
    return Status::Ok();
  }

  Status ParseAlignment() {
    auto it = f_->kv_index_.find(gguf_key::kAlignment.name);
    f_->alignment_ = gguf_key::kAlignment.default_u32();
    if (it == f_->kv_index_.end()) return Status::Ok();
    const GgufKeyValue& kv = f_->kvs_[it->second];
    if (kv.value.type != GgufType::kUint32) {
      return Corrupt("metadata 'general.alignment'", kv.offset,
                     "has type " + GgufTypeName(kv.value.type) + ", expected u32");
    }
    const uint32_t a = static_cast<uint32_t>(kv.value.scalar_bits);
    if (a == 0 || (a & (a - 1)) != 0) {
      return Corrupt("metadata 'general.alignment'", kv.value.offset,
                     "alignment " + std::to_string(a) + " is not a power of two");
    }
    f_->alignment_ = a;
    return Status::Ok();
  }

  Status ParseTensorInfos() {
    f_->tensors_.reserve(static_cast<size_t>(tensor_count_));
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      GgufTensorInfo t;
      t.info_offset = pos_;
      FGEMMA_RETURN_IF_ERROR(ReadString("tensor #" + std::to_string(i) + " name", &t.name));
      const std::string field = "tensor " + Quoted(t.name);
      const uint64_t dims_at = pos_;
      FGEMMA_RETURN_IF_ERROR(ReadU32(field + " n_dims", &t.n_dims));
      if (t.n_dims > kMaxDims) {
        return Corrupt(field + " n_dims", dims_at, std::to_string(t.n_dims) + " dimensions (at most 4 are allowed)");
      }
      t.n_elements = 1;
      bool overflow = false;
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        const uint64_t ne_at = pos_;
        const std::string ne_field = field + " ne[" + std::to_string(d) + "]";
        FGEMMA_RETURN_IF_ERROR(ReadU64(ne_field, &t.ne[d]));
        if (t.ne[d] > kInt64Max) {
          return Corrupt(ne_field, ne_at, "dimension " + std::to_string(t.ne[d]) + " exceeds 2^63-1");
        }
        uint64_t product = 0;
        if (__builtin_mul_overflow(t.n_elements, t.ne[d], &product) || product > kInt64Max) overflow = true;
        t.n_elements = product;
      }
      if (overflow) {
        std::string dims;
        for (uint32_t d = 0; d < t.n_dims; ++d) dims += (d ? " x " : "") + std::to_string(t.ne[d]);
        return Corrupt(field + " dims", dims_at, "the element count of " + dims + " overflows 64 bits");
      }
      const uint64_t type_at = pos_;
      FGEMMA_RETURN_IF_ERROR(ReadU32(field + " type", &t.ggml_type));
      uint32_t block_size = 0, block_bytes = 0;
      if (!GgmlTypeLayout(t.ggml_type, &block_size, &block_bytes)) {
        return Corrupt(field + " type", type_at, "unknown ggml tensor type " + std::to_string(t.ggml_type));
      }
      if (t.ne[0] % block_size != 0) {
        return Corrupt(field + " ne[0]", dims_at + 4,
                       "row length " + std::to_string(t.ne[0]) + " is not a multiple of the " + GgmlTypeName(t.ggml_type) +
                           " block size " + std::to_string(block_size));
      }
      // n_elements / block_size blocks of block_bytes each; at most ~2^63 * 4 / 1 must be checked.
      if (__builtin_mul_overflow(t.n_elements / block_size, static_cast<uint64_t>(block_bytes), &t.n_bytes)) {
        return Corrupt(field + " dims", dims_at, "the byte size of the tensor overflows 64 bits");
      }
      const uint64_t offset_at = pos_;
      FGEMMA_RETURN_IF_ERROR(ReadU64(field + " offset", &t.offset));
      offset_fields_.push_back(offset_at);
      auto [it, inserted] = f_->tensor_index_.emplace(t.name, f_->tensors_.size());
      if (!inserted) {
        return Corrupt("tensor name", t.info_offset,
                       "duplicate tensor name " + Quoted(t.name) + " (first defined at offset " +
                           std::to_string(f_->tensors_[it->second].info_offset) + ")");
      }
      f_->tensors_.push_back(t);
    }
    return Status::Ok();
  }

  Status CheckTensorData() {
    const uint64_t a = f_->alignment_;
    const uint64_t rem = pos_ % a;
    const uint64_t padding = rem == 0 ? 0 : a - rem;
    f_->data_offset_ = pos_ + padding;  // pos_ <= size_ < 2^64 - 2^32: no overflow
    const uint64_t data_size = f_->data_offset_ <= size_ ? size_ - f_->data_offset_ : 0;
    struct Span {
      uint64_t begin, end;
      size_t index;
    };
    std::vector<Span> spans;
    spans.reserve(f_->tensors_.size());
    for (size_t i = 0; i < f_->tensors_.size(); ++i) {
      const GgufTensorInfo& t = f_->tensors_[i];
      const std::string field = "tensor " + Quoted(t.name) + " offset";
      if (t.offset % a != 0) {
        return Corrupt(field, offset_fields_[i],
                       "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(a));
      }
      if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
        return Corrupt(field, offset_fields_[i],
                       "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                           " bytes) runs past the end of the file (data section starts at " +
                           std::to_string(f_->data_offset_) + ", file size " + std::to_string(size_) + ")");
      }
      if (t.n_bytes > 0) spans.push_back({t.offset, t.offset + t.n_bytes, i});
    }
    std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.begin < y.begin; });
    for (size_t i = 1; i < spans.size(); ++i) {
      if (spans[i].begin < spans[i - 1].end) {
        const GgufTensorInfo& t = f_->tensors_[spans[i].index];
        const GgufTensorInfo& prev = f_->tensors_[spans[i - 1].index];
        return Corrupt("tensor " + Quoted(t.name) + " offset", offset_fields_[spans[i].index],
                       "data [" + std::to_string(spans[i].begin) + ", " + std::to_string(spans[i].end) +
                           ") overlaps tensor " + Quoted(prev.name) + " data [" + std::to_string(spans[i - 1].begin) +
                           ", " + std::to_string(spans[i - 1].end) + ")");
      }
    }
    return Status::Ok();
  }

  GgufFile* f_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
  std::vector<uint64_t> offset_fields_;  // file offset of each tensor's offset field
};

namespace {
std::atomic<uint64_t> g_parse_count{0};
}  // namespace

uint64_t GgufFile::ParseCount() { return g_parse_count.load(std::memory_order_relaxed); }

Result<GgufFile> GgufFile::FromMemory(const uint8_t* data, size_t size, std::string name) {
  g_parse_count.fetch_add(1, std::memory_order_relaxed);
  GgufFile f;
  f.name_ = std::move(name);
  f.data_ = data;
  f.size_ = size;
  GgufParser parser(&f);
  FGEMMA_RETURN_IF_ERROR(parser.Parse());
  return f;
}

Result<GgufFile> GgufFile::Open(const std::string& path) {
  FGEMMA_TRY(MappedFile mapping, MappedFile::Open(path));
  g_parse_count.fetch_add(1, std::memory_order_relaxed);
  GgufFile f;
  f.name_ = path;
  f.data_ = mapping.data();
  f.size_ = mapping.size();
  f.mapping_ = std::move(mapping);  // the mapping's address does not change when moved
  GgufParser parser(&f);
  FGEMMA_RETURN_IF_ERROR(parser.Parse());
  return f;
}

// ---------------------------------------------------------------------------------------------
// Metadata getters

namespace {

Status MissingKey(const std::string& file, std::string_view key) {
  return NotFound(file + ": metadata key " + Quoted(key) + " is missing");
}

Status WrongType(const std::string& file, std::string_view key, const GgufValue& v, const std::string& wanted) {
  std::string stored = GgufTypeName(v.type);
  if (v.type == GgufType::kArray) stored = "array of " + GgufTypeName(v.array_type);
  return CorruptFile(file + ": metadata key " + Quoted(key) + " at offset " + std::to_string(v.offset) +
                     " has the wrong type: " + stored + ", expected " + wanted);
}

template <typename T>
const char* IntName() {
  if constexpr (std::is_same_v<T, uint32_t>) return "u32";
  if constexpr (std::is_same_v<T, int32_t>) return "i32";
  if constexpr (std::is_same_v<T, uint64_t>) return "u64";
  return "i64";
}

std::string ScalarText(const GgufValue& v) {
  return IsSignedInteger(v.type) ? std::to_string(v.AsSigned()) : std::to_string(v.scalar_bits);
}

}  // namespace

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

template <typename T>
static Result<T> GetInteger(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) return MissingKey(f.name(), key);
  if (!v->IsInteger()) return WrongType(f.name(), key, *v, std::string("an integer (") + IntName<T>() + ")");
  T out{};
  if (!IntegerFits<T>(v->scalar_bits, v->type, &out)) {
    return OutOfRange(f.name() + ": metadata key " + Quoted(key) + " at offset " + std::to_string(v->offset) +
                      ": value " + ScalarText(*v) + " does not fit in " + IntName<T>());
  }
  return out;
}

Result<uint32_t> GgufFile::GetU32(std::string_view key) const { return GetInteger<uint32_t>(*this, key); }
Result<int32_t> GgufFile::GetI32(std::string_view key) const { return GetInteger<int32_t>(*this, key); }
Result<uint64_t> GgufFile::GetU64(std::string_view key) const { return GetInteger<uint64_t>(*this, key); }
Result<int64_t> GgufFile::GetI64(std::string_view key) const { return GetInteger<int64_t>(*this, key); }

Result<double> GgufFile::GetF64(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(name_, key);
  if (!v->IsFloat()) return WrongType(name_, key, *v, "a float (f32 or f64)");
  return v->AsDouble();
}

Result<float> GgufFile::GetF32(std::string_view key) const {
  FGEMMA_TRY(double d, GetF64(key));
  return static_cast<float>(d);  // exact for f32 values
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(name_, key);
  if (v->type != GgufType::kBool) return WrongType(name_, key, *v, "bool");
  return v->scalar_bits != 0;
}

Result<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(name_, key);
  if (v->type != GgufType::kString) return WrongType(name_, key, *v, "string");
  return std::string(v->string);
}

Result<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(name_, key);
  if (v->type != GgufType::kArray || v->array_type != GgufType::kString) {
    return WrongType(name_, key, *v, "array of string");
  }
  return std::vector<std::string>(v->array_strings.begin(), v->array_strings.end());
}

Result<std::vector<float>> GgufFile::GetF32Array(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(name_, key);
  if (v->type != GgufType::kArray || !IsFloatType(v->array_type)) {
    return WrongType(name_, key, *v, "array of f32 or f64");
  }
  std::vector<float> out(static_cast<size_t>(v->array_count));
  if (v->array_type == GgufType::kFloat32) {
    if (!out.empty()) std::memcpy(out.data(), v->array_data, out.size() * 4);
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(BitsToDouble(LoadBits(v->array_data + 8 * i, 8), v->array_type));
  }
  return out;
}

template <typename T>
static Result<std::vector<T>> GetIntegerArray(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) return MissingKey(f.name(), key);
  if (v->type != GgufType::kArray || !IsIntegerType(v->array_type)) {
    return WrongType(f.name(), key, *v, std::string("array of integers (") + IntName<T>() + ")");
  }
  const size_t n = GgufTypeSize(v->array_type);
  std::vector<T> out(static_cast<size_t>(v->array_count));
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t bits = LoadBits(v->array_data + n * i, n);
    if (!IntegerFits<T>(bits, v->array_type, &out[i])) {
      return OutOfRange(f.name() + ": metadata key " + Quoted(key) + " element " + std::to_string(i) + " at offset " +
                        std::to_string(v->offset + 12 + n * i) + " does not fit in " + IntName<T>());
    }
  }
  return out;
}

Result<std::vector<int32_t>> GgufFile::GetI32Array(std::string_view key) const {
  return GetIntegerArray<int32_t>(*this, key);
}
Result<std::vector<uint32_t>> GgufFile::GetU32Array(std::string_view key) const {
  return GetIntegerArray<uint32_t>(*this, key);
}

Result<std::string> GgufFile::Architecture() const { return GetString(gguf_key::kArchitecture.name); }

Result<GgufTokenizer> GgufFile::ReadTokenizer() const {
  namespace k = gguf_key;
  GgufTokenizer tok;
  FGEMMA_TRY(tok.tokens, GetStringArray(k::kTokens.name));
  const size_t n_vocab = tok.tokens.size();
  if (Has(k::kTokenizerModel.name)) {
    FGEMMA_TRY(tok.model, GetString(k::kTokenizerModel.name));
  }
  if (Has(k::kTokenizerPre.name)) {
    FGEMMA_TRY(tok.pre, GetString(k::kTokenizerPre.name));
  }
  auto check_length = [&](std::string_view key, size_t n) -> Status {
    if (n == n_vocab) return Status::Ok();
    return CorruptFile(name_ + ": metadata key " + Quoted(key) + " has " + std::to_string(n) + " entries but " +
                       std::string(k::kTokens.name) + " has " + std::to_string(n_vocab));
  };
  if (Has(k::kScores.name)) {
    FGEMMA_TRY(tok.scores, GetF32Array(k::kScores.name));
    FGEMMA_RETURN_IF_ERROR(check_length(k::kScores.name, tok.scores.size()));
  }
  if (Has(k::kTokenType.name)) {
    FGEMMA_TRY(tok.token_types, GetI32Array(k::kTokenType.name));
    FGEMMA_RETURN_IF_ERROR(check_length(k::kTokenType.name, tok.token_types.size()));
  }
  if (Has(k::kMerges.name)) {
    FGEMMA_TRY(tok.merges, GetStringArray(k::kMerges.name));
  }
  const std::pair<const GgufKey*, int32_t*> ids[] = {
      {&k::kBosTokenId, &tok.bos_id},       {&k::kEosTokenId, &tok.eos_id},
      {&k::kUnknownTokenId, &tok.unk_id},   {&k::kPaddingTokenId, &tok.pad_id},
      {&k::kSeparatorTokenId, &tok.sep_id}, {&k::kEotTokenId, &tok.eot_id},
      {&k::kEomTokenId, &tok.eom_id},       {&k::kMaskTokenId, &tok.mask_id},
  };
  for (const auto& [key, out] : ids) {
    if (!Has(key->name)) continue;
    FGEMMA_TRY(int32_t id, GetI32(key->name));
    if (id < 0 || static_cast<size_t>(id) >= n_vocab) {
      return CorruptFile(name_ + ": metadata key " + Quoted(key->name) + " = " + std::to_string(id) +
                         " is outside the vocabulary of " + std::to_string(n_vocab) + " tokens");
    }
    *out = id;
  }
  const std::pair<const GgufKey*, std::optional<bool>*> flags[] = {
      {&k::kAddBosToken, &tok.add_bos},
      {&k::kAddEosToken, &tok.add_eos},
      {&k::kAddSpacePrefix, &tok.add_space_prefix},
  };
  for (const auto& [key, out] : flags) {
    if (!Has(key->name)) continue;
    FGEMMA_TRY(bool b, GetBool(key->name));
    *out = b;
  }
  if (Has(k::kChatTemplate.name)) {
    FGEMMA_TRY(tok.chat_template, GetString(k::kChatTemplate.name));
  }
  return tok;
}

// ---------------------------------------------------------------------------------------------
// Tensors

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<TensorView> GgufFile::GetTensorView(std::string_view name) const {
  const GgufTensorInfo* t = FindTensor(name);
  if (t == nullptr) return NotFound(name_ + ": no tensor named " + Quoted(name));
  return GetTensorView(*t);
}

Result<TensorView> GgufFile::GetTensorView(const GgufTensorInfo& t) const {
  auto dtype = DTypeFromGgmlType(t.ggml_type);
  if (!dtype.ok()) return dtype.status().WithContext(name_ + ": tensor " + Quoted(t.name));
  // Sizes were checked against the (mapped, hence size_t-addressable) file when it was opened, but
  // the element counts of a block type can exceed the byte count: check before narrowing.
  const uint64_t rows = t.rows();
  if (t.ne[0] > std::numeric_limits<size_t>::max() || rows > std::numeric_limits<size_t>::max()) {
    return OutOfRange(name_ + ": tensor " + Quoted(t.name) + " is too large for this address space");
  }
  TensorView v;
  v.dtype = *dtype;
  v.cols = static_cast<size_t>(t.ne[0]);
  v.rows = static_cast<size_t>(rows);
  v.data = TensorData(t);
  return v;
}

// ---------------------------------------------------------------------------------------------

Status ParseGgufFromMemory(const uint8_t* data, size_t size) {
  FGEMMA_TRY(GgufFile f, GgufFile::FromMemory(data, size, "<fuzz>"));
  for (const GgufKeyValue& kv : f.metadata()) {
    const GgufValue& v = kv.value;
    if (v.IsInteger()) {
      (void)f.GetU32(kv.key);
      (void)f.GetI64(kv.key);
    } else if (v.IsFloat()) {
      (void)f.GetF32(kv.key);
    } else if (v.type == GgufType::kBool) {
      (void)f.GetBool(kv.key);
    } else if (v.type == GgufType::kString) {
      (void)f.GetString(kv.key);
    } else if (v.array_type == GgufType::kString) {
      (void)f.GetStringArray(kv.key);
    } else if (IsFloatType(v.array_type)) {
      (void)f.GetF32Array(kv.key);
    } else if (IsIntegerType(v.array_type)) {
      (void)f.GetI32Array(kv.key);
    }
  }
  (void)f.ReadTokenizer();
  std::vector<float> row;
  for (const GgufTensorInfo& t : f.tensors()) {
    auto view = f.GetTensorView(t);
    if (!view.ok() || view->rows == 0 || view->cols == 0 || view->cols > (1u << 20)) continue;
    row.resize(view->cols);
    DequantizeRow(*view, 0, row.data());
    DequantizeRow(*view, view->rows - 1, row.data());
  }
  return Status::Ok();
}

}  // namespace fgemma
