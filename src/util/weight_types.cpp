#include "util/weight_types.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace fgemma {

Result<DType> DTypeFromName(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // The long float names are accepted too (as Hugging Face spells torch dtypes).
  if (n == "float32") return DType::kF32;
  if (n == "float16") return DType::kF16;
  if (n == "bfloat16") return DType::kBF16;
  for (const WeightTypeInfo& w : kWeightTypes) {
    std::string lower = w.name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (n == lower) return w.dtype;
  }
  return InvalidArgument("unknown tensor type '" + name + "' (expected " + WeightTypeNames() + ")");
}

std::string WeightTypeNames() {
  std::string names;
  const size_t count = std::size(kWeightTypes);
  for (size_t i = 0; i < count; ++i) {
    names += i == 0 ? "" : (i + 1 == count ? " or " : ", ");
    names += kWeightTypes[i].name;
  }
  return names;
}

Status QuantizeRow(DType type, const float* x, size_t n, void* out) {
  const WeightTypeInfo& w = WeightType(type);
  if (n % w.block_size != 0) {
    return InvalidArgument("cannot convert a row of " + std::to_string(n) + " values to " + w.name +
                           ": not a multiple of its block size " + std::to_string(w.block_size));
  }
  w.quantize_row(x, n, out);
  return Status::Ok();
}

}  // namespace fgemma
