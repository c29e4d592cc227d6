#include "io/gguf_writer.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include "io/gguf_internal.h"
#include "util/file_replace.h"

namespace fgemma {

using gguf_internal::Quoted;

namespace {

constexpr uint32_t kVersion = 3;
constexpr size_t kMaxTensorName = 63;  // llama.cpp: names must be shorter than GGML_MAX_NAME (64)

void AppendLe(std::string* out, uint64_t v, size_t n) {
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian host (checked in gguf.cpp)
  out->append(b, n);
}

void AppendString(std::string* out, std::string_view s) {
  AppendLe(out, s.size(), 8);
  out->append(s.data(), s.size());
}

// Element type, count and elements of an array of strings (any container of string-likes).
template <typename Strings>
void AppendStringArray(std::string* out, const Strings& values) {
  AppendLe(out, static_cast<uint32_t>(GgufType::kString), 4);
  AppendLe(out, values.size(), 8);
  for (const auto& s : values) AppendString(out, s);
}

uint64_t PaddingFor(uint64_t n, uint64_t alignment) {
  const uint64_t r = n % alignment;
  return r == 0 ? 0 : alignment - r;
}

}  // namespace

Result<GgufWriter> GgufWriter::Create(const std::string& path) {
  GgufWriter w;
  w.path_ = path;
  FGEMMA_TRY(FileReplacement out, FileReplacement::Begin(path));
  w.out_ = std::make_unique<FileReplacement>(std::move(out));
  w.file_ = w.out_->stream();
  if (w.file_ == nullptr) return IoError(w.out_->temp_path() + ": cannot open a stream for writing: " + std::strerror(errno));
  return w;
}

GgufWriter::GgufWriter(GgufWriter&& other) noexcept { *this = std::move(other); }

GgufWriter& GgufWriter::operator=(GgufWriter&& other) noexcept {
  if (this != &other) {
    Abandon();
    path_ = std::move(other.path_);
    out_ = std::move(other.out_);
    file_ = other.file_;
    other.file_ = nullptr;
    error_ = std::move(other.error_);
    finished_ = other.finished_;
    header_written_ = other.header_written_;
    alignment_ = other.alignment_;
    kv_count_ = other.kv_count_;
    kv_bytes_ = std::move(other.kv_bytes_);
    keys_ = std::move(other.keys_);
    tensors_ = std::move(other.tensors_);
    tensor_names_ = std::move(other.tensor_names_);
    data_size_ = other.data_size_;
    current_ = other.current_;
    current_written_ = other.current_written_;
  }
  return *this;
}

GgufWriter::~GgufWriter() { Abandon(); }

void GgufWriter::Abandon() {
  if (out_ != nullptr) {
    out_.reset();  // closes and removes the temporary file
    file_ = nullptr;
  }
}

Status GgufWriter::Fail(Status s) {
  if (error_.ok()) error_ = s;
  return s;
}

Status GgufWriter::Write(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    return Fail(IoError(out_->temp_path() + ": write failed: " + std::strerror(errno)));
  }
  return Status::Ok();
}

Status GgufWriter::WritePadding(uint64_t n) {
  static const char kZeros[256] = {};
  while (n > 0) {
    const size_t chunk = n < sizeof(kZeros) ? static_cast<size_t>(n) : sizeof(kZeros);
    FGEMMA_RETURN_IF_ERROR(Write(kZeros, chunk));
    n -= chunk;
  }
  return Status::Ok();
}

// ---- metadata ----

Status GgufWriter::CheckMetadataOpen(std::string_view key) {
  if (!error_.ok()) return error_;
  if (finished_) return InvalidArgument(path_ + ": metadata " + Quoted(key) + " added after Finish()");
  if (header_written_) {
    return Fail(InvalidArgument(path_ + ": metadata " + Quoted(key) + " added after tensor data was written"));
  }
  if (!keys_.insert(std::string(key)).second) {
    return Fail(InvalidArgument(path_ + ": duplicate metadata key " + Quoted(key)));
  }
  return Status::Ok();
}

void GgufWriter::PutKey(std::string_view key, GgufType type) {
  AppendString(&kv_bytes_, key);
  AppendLe(&kv_bytes_, static_cast<uint32_t>(type), 4);
  ++kv_count_;
}

Status GgufWriter::AddScalar(std::string_view key, GgufType type, uint64_t bits) {
  const GgufKey& align = gguf_key::kAlignment;
  if (key == align.name) {
    const std::string what = path_ + ": " + std::string(align.name);
    if (!error_.ok()) return error_;
    if (type != align.type) {
      return Fail(InvalidArgument(what + " must be " + GgufTypeName(align.type) + ", not " + GgufTypeName(type)));
    }
    if (bits == 0 || (bits & (bits - 1)) != 0) {
      return Fail(InvalidArgument(what + " " + std::to_string(bits) + " is not a power of two"));
    }
    if (!tensors_.empty() && bits != alignment_) {
      return Fail(InvalidArgument(what + " must be set before tensors are declared"));
    }
  }
  FGEMMA_RETURN_IF_ERROR(CheckMetadataOpen(key));
  if (key == align.name) alignment_ = static_cast<uint32_t>(bits);
  PutKey(key, type);
  AppendLe(&kv_bytes_, bits, GgufTypeSize(type));
  return Status::Ok();
}

Status GgufWriter::AddU8(std::string_view key, uint8_t v) { return AddScalar(key, GgufType::kUint8, v); }
Status GgufWriter::AddI8(std::string_view key, int8_t v) {
  return AddScalar(key, GgufType::kInt8, static_cast<uint8_t>(v));
}
Status GgufWriter::AddU16(std::string_view key, uint16_t v) { return AddScalar(key, GgufType::kUint16, v); }
Status GgufWriter::AddI16(std::string_view key, int16_t v) {
  return AddScalar(key, GgufType::kInt16, static_cast<uint16_t>(v));
}
Status GgufWriter::AddU32(std::string_view key, uint32_t v) { return AddScalar(key, GgufType::kUint32, v); }
Status GgufWriter::AddI32(std::string_view key, int32_t v) {
  return AddScalar(key, GgufType::kInt32, static_cast<uint32_t>(v));
}
Status GgufWriter::AddU64(std::string_view key, uint64_t v) { return AddScalar(key, GgufType::kUint64, v); }
Status GgufWriter::AddI64(std::string_view key, int64_t v) {
  return AddScalar(key, GgufType::kInt64, static_cast<uint64_t>(v));
}
Status GgufWriter::AddF32(std::string_view key, float v) {
  return AddScalar(key, GgufType::kFloat32, std::bit_cast<uint32_t>(v));
}
Status GgufWriter::AddF64(std::string_view key, double v) {
  return AddScalar(key, GgufType::kFloat64, std::bit_cast<uint64_t>(v));
}
Status GgufWriter::AddBool(std::string_view key, bool v) { return AddScalar(key, GgufType::kBool, v ? 1 : 0); }

Status GgufWriter::AddString(std::string_view key, std::string_view v) {
  FGEMMA_RETURN_IF_ERROR(CheckMetadataOpen(key));
  PutKey(key, GgufType::kString);
  AppendString(&kv_bytes_, v);
  return Status::Ok();
}

Status GgufWriter::AddArray(std::string_view key, GgufType element_type, const void* elements, uint64_t count) {
  const size_t size = GgufTypeSize(element_type);
  if (size == 0) {
    if (!error_.ok()) return error_;
    return Fail(InvalidArgument(path_ + ": metadata " + Quoted(key) + ": AddArray takes fixed-size elements, not " +
                                GgufTypeName(element_type)));
  }
  if (count > std::numeric_limits<size_t>::max() / size || (count > 0 && elements == nullptr)) {
    if (!error_.ok()) return error_;
    return Fail(OutOfRange(path_ + ": metadata " + Quoted(key) + ": array of " + std::to_string(count) +
                           " elements is too large or has no data"));
  }
  FGEMMA_RETURN_IF_ERROR(CheckMetadataOpen(key));
  PutKey(key, GgufType::kArray);
  AppendLe(&kv_bytes_, static_cast<uint32_t>(element_type), 4);
  AppendLe(&kv_bytes_, count, 8);
  if (count > 0) kv_bytes_.append(static_cast<const char*>(elements), static_cast<size_t>(count) * size);
  return Status::Ok();
}

Status GgufWriter::AddStringArray(std::string_view key, const std::vector<std::string>& values) {
  FGEMMA_RETURN_IF_ERROR(CheckMetadataOpen(key));
  PutKey(key, GgufType::kArray);
  AppendStringArray(&kv_bytes_, values);
  return Status::Ok();
}

Status GgufWriter::AddF32Array(std::string_view key, const std::vector<float>& values) {
  return AddArray(key, GgufType::kFloat32, values.data(), values.size());
}

Status GgufWriter::AddI32Array(std::string_view key, const std::vector<int32_t>& values) {
  return AddArray(key, GgufType::kInt32, values.data(), values.size());
}

Status GgufWriter::AddValue(std::string_view key, const GgufValue& value) {
  switch (value.type) {
    case GgufType::kString: return AddString(key, value.string);
    case GgufType::kArray:
      if (value.array_type == GgufType::kString) {
        FGEMMA_RETURN_IF_ERROR(CheckMetadataOpen(key));
        PutKey(key, GgufType::kArray);
        AppendStringArray(&kv_bytes_, value.array_strings);
        return Status::Ok();
      }
      return AddArray(key, value.array_type, value.array_data, value.array_count);
    default: return AddScalar(key, value.type, value.scalar_bits);
  }
}

// ---- tensors ----

Status GgufWriter::DeclareTensor(std::string_view name, DType type, const std::vector<uint64_t>& ne) {
  return DeclareTensor(name, GgmlTypeFromDType(type), ne);
}

Status GgufWriter::DeclareTensor(std::string_view name, uint32_t ggml_type, const std::vector<uint64_t>& ne) {
  if (!error_.ok()) return error_;
  const std::string what = path_ + ": tensor " + Quoted(name);
  if (finished_ || header_written_) return Fail(InvalidArgument(what + " declared after tensor data was written"));
  if (name.empty() || name.size() > kMaxTensorName) {
    return Fail(InvalidArgument(what + ": names must be 1 to " + std::to_string(kMaxTensorName) + " bytes long"));
  }
  if (ne.empty() || ne.size() > 4) {
    return Fail(InvalidArgument(what + ": " + std::to_string(ne.size()) + " dimensions (1 to 4 are allowed)"));
  }
  uint32_t block_size = 0, block_bytes = 0;
  if (!GgmlTypeLayout(ggml_type, &block_size, &block_bytes)) {
    return Fail(InvalidArgument(what + ": unknown ggml type " + std::to_string(ggml_type)));
  }
  if (ne[0] % block_size != 0) {
    return Fail(InvalidArgument(what + ": row length " + std::to_string(ne[0]) + " is not a multiple of the " +
                                GgmlTypeName(ggml_type) + " block size " + std::to_string(block_size)));
  }
  uint64_t elements = 1;
  for (uint64_t d : ne) {
    if (__builtin_mul_overflow(elements, d, &elements) ||
        elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Fail(InvalidArgument(what + ": element count overflows"));
    }
  }
  uint64_t n_bytes = 0;
  uint64_t padded = 0;
  if (__builtin_mul_overflow(elements / block_size, static_cast<uint64_t>(block_bytes), &n_bytes) ||
      __builtin_add_overflow(n_bytes, PaddingFor(n_bytes, alignment_), &padded) ||
      __builtin_add_overflow(data_size_, padded, &padded)) {
    return Fail(InvalidArgument(what + ": byte size overflows"));
  }
  if (!tensor_names_.insert(std::string(name)).second) {
    return Fail(InvalidArgument(path_ + ": duplicate tensor name " + Quoted(name)));
  }
  Tensor t;
  t.name = std::string(name);
  t.ne = ne;
  t.ggml_type = ggml_type;
  t.offset = data_size_;
  t.n_bytes = n_bytes;
  data_size_ = padded;
  tensors_.push_back(std::move(t));
  return Status::Ok();
}

Status GgufWriter::WriteHeader() {
  std::string h;
  AppendLe(&h, 0x46554747u, 4);  // "GGUF"
  AppendLe(&h, kVersion, 4);
  AppendLe(&h, tensors_.size(), 8);
  AppendLe(&h, kv_count_, 8);
  h += kv_bytes_;
  for (const Tensor& t : tensors_) {
    AppendString(&h, t.name);
    AppendLe(&h, t.ne.size(), 4);
    for (uint64_t d : t.ne) AppendLe(&h, d, 8);
    AppendLe(&h, t.ggml_type, 4);
    AppendLe(&h, t.offset, 8);
  }
  h.append(static_cast<size_t>(PaddingFor(h.size(), alignment_)), '\0');
  header_written_ = true;
  kv_bytes_.clear();
  kv_bytes_.shrink_to_fit();
  return Write(h.data(), h.size());
}

Status GgufWriter::WriteTensorData(std::string_view name, const void* data, size_t bytes) {
  if (!error_.ok()) return error_;
  if (finished_) return InvalidArgument(path_ + ": tensor " + Quoted(name) + " data written after Finish()");
  // Zero-byte tensors are complete without data; step over those not named here.
  while (current_ < tensors_.size() && tensors_[current_].n_bytes == 0 && tensors_[current_].name != name) {
    ++current_;
  }
  if (current_ >= tensors_.size()) {
    return Fail(InvalidArgument(path_ + ": data for tensor " + Quoted(name) +
                                (tensor_names_.count(std::string(name)) ? ", which is already complete"
                                                                        : ", which was never declared")));
  }
  Tensor& t = tensors_[current_];
  if (name != t.name) {
    return Fail(InvalidArgument(path_ + ": data for tensor " + Quoted(name) + " while tensor " + Quoted(t.name) +
                                " is next (tensors are written in declaration order)"));
  }
  if (bytes > t.n_bytes - current_written_) {
    return Fail(InvalidArgument(path_ + ": tensor " + Quoted(name) + ": " + std::to_string(bytes) +
                                " bytes written with only " + std::to_string(t.n_bytes - current_written_) + " of its " +
                                std::to_string(t.n_bytes) + " bytes left"));
  }
  if (!header_written_) FGEMMA_RETURN_IF_ERROR(WriteHeader());
  FGEMMA_RETURN_IF_ERROR(Write(data, bytes));
  current_written_ += bytes;
  if (current_written_ == t.n_bytes) {
    FGEMMA_RETURN_IF_ERROR(WritePadding(PaddingFor(t.n_bytes, alignment_)));
    ++current_;
    current_written_ = 0;
  }
  return Status::Ok();
}

Status GgufWriter::Finish() {
  if (!error_.ok()) return error_;
  if (finished_) return InvalidArgument(path_ + ": Finish() called twice");
  if (!header_written_) FGEMMA_RETURN_IF_ERROR(WriteHeader());
  // Zero-byte tensors complete without any data call.
  while (current_ < tensors_.size() && tensors_[current_].n_bytes == 0) ++current_;
  if (current_ < tensors_.size()) {
    const Tensor& t = tensors_[current_];
    return Fail(InvalidArgument(path_ + ": tensor " + Quoted(t.name) + " is incomplete: " +
                                std::to_string(current_written_) + " of " + std::to_string(t.n_bytes) +
                                " bytes written (" + std::to_string(tensors_.size() - current_) +
                                " tensors incomplete)"));
  }
  // FileReplacement flushes, syncs, renames over path_ (a regular file or nothing) and syncs the
  // directory; on failure it removes the temporary file.
  Status committed = out_->Commit();
  out_.reset();
  file_ = nullptr;
  if (!committed.ok()) return Fail(committed);
  finished_ = true;
  return Status::Ok();
}

}  // namespace fgemma
