#include "io/gguf_keys.h"

#include <type_traits>

#include "io/gguf_writer.h"

namespace fgemma {
namespace {

// Absent `key`: NotFound when required (the getter's message), else whether a default applies.
template <typename T, typename Getter>
Status Read(const GgufFile& f, const GgufKey& key, T* out, Getter get) {
  if (!key.required && !f.Has(key.name)) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (key.default_key.empty()) *out = std::string(key.default_text);
    } else {
      if (key.default_key.empty()) *out = static_cast<T>(key.default_number);
    }
    return Status::Ok();
  }
  FGEMMA_TRY(*out, get(key.name));
  return Status::Ok();
}

Status CheckType(const GgufKey& key, GgufType type, GgufType element = GgufType::kUint8) {
  if (key.type == type && (type != GgufType::kArray || key.element == element)) return Status::Ok();
  return Internal("GGUF key '" + std::string(key.name) + "' is written as " + GgufTypeName(key.type) + ", not " +
                  GgufTypeName(type));
}

}  // namespace

Status ReadGgufKey(const GgufFile& f, const GgufKey& key, uint32_t* out) {
  return Read(f, key, out, [&f](std::string_view k) { return f.GetU32(k); });
}
Status ReadGgufKey(const GgufFile& f, const GgufKey& key, int32_t* out) {
  return Read(f, key, out, [&f](std::string_view k) { return f.GetI32(k); });
}
Status ReadGgufKey(const GgufFile& f, const GgufKey& key, float* out) {
  return Read(f, key, out, [&f](std::string_view k) { return f.GetF32(k); });
}
Status ReadGgufKey(const GgufFile& f, const GgufKey& key, std::string* out) {
  return Read(f, key, out, [&f](std::string_view k) { return f.GetString(k); });
}

Status AddGgufKey(GgufWriter& w, const GgufKey& key, uint32_t v) {
  FGEMMA_RETURN_IF_ERROR(CheckType(key, GgufType::kUint32));
  return w.AddU32(key.name, v);
}
Status AddGgufKey(GgufWriter& w, const GgufKey& key, float v) {
  FGEMMA_RETURN_IF_ERROR(CheckType(key, GgufType::kFloat32));
  return w.AddF32(key.name, v);
}
Status AddGgufKey(GgufWriter& w, const GgufKey& key, bool v) {
  FGEMMA_RETURN_IF_ERROR(CheckType(key, GgufType::kBool));
  return w.AddBool(key.name, v);
}
Status AddGgufKey(GgufWriter& w, const GgufKey& key, std::string_view v) {
  FGEMMA_RETURN_IF_ERROR(CheckType(key, GgufType::kString));
  return w.AddString(key.name, v);
}
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const char* v) { return AddGgufKey(w, key, std::string_view(v)); }
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const std::vector<std::string>& v) {
  FGEMMA_RETURN_IF_ERROR(CheckType(key, GgufType::kArray, GgufType::kString));
  return w.AddStringArray(key.name, v);
}
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const std::vector<float>& v) {
  FGEMMA_RETURN_IF_ERROR(CheckType(key, GgufType::kArray, GgufType::kFloat32));
  return w.AddF32Array(key.name, v);
}
Status AddGgufKey(GgufWriter& w, const GgufKey& key, const std::vector<int32_t>& v) {
  FGEMMA_RETURN_IF_ERROR(CheckType(key, GgufType::kArray, GgufType::kInt32));
  return w.AddI32Array(key.name, v);
}

}  // namespace fgemma
