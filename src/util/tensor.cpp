#include "util/tensor.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "util/float_types.h"

namespace fgemma {

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
  }
  return "?";
}

Result<DType> DTypeFromName(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (n == "f32" || n == "float32") return DType::kF32;
  if (n == "f16" || n == "float16") return DType::kF16;
  if (n == "bf16" || n == "bfloat16") return DType::kBF16;
  if (n == "q8_0") return DType::kQ8_0;
  if (n == "q4_0") return DType::kQ4_0;
  return InvalidArgument("unknown tensor type '" + name + "' (expected f32, f16, bf16, q8_0 or q4_0)");
}

size_t DTypeBlockSize(DType t) { return DTypeIsQuantized(t) ? 32 : 1; }

size_t DTypeBlockBytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kQ8_0: return 34;
    case DType::kQ4_0: return 18;
  }
  return 0;
}

void DequantizeRow(const TensorView& t, size_t r, float* out) {
  const uint8_t* p = t.row(r);
  const size_t n = t.cols;
  switch (t.dtype) {
    case DType::kF32:
      std::memcpy(out, p, n * 4);
      return;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = F16ToF32(h);
      }
      return;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = Bf16ToF32(h);
      }
      return;
    case DType::kQ8_0:
      for (size_t b = 0; b < n / 32; ++b, p += 34) {
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        const float d = F16ToF32(dh);
        for (int i = 0; i < 32; ++i) out[b * 32 + i] = d * static_cast<float>(static_cast<int8_t>(p[2 + i]));
      }
      return;
    case DType::kQ4_0:
      for (size_t b = 0; b < n / 32; ++b, p += 18) {
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        const float d = F16ToF32(dh);
        for (int i = 0; i < 16; ++i) {
          out[b * 32 + i] = d * static_cast<float>((p[2 + i] & 0x0f) - 8);
          out[b * 32 + i + 16] = d * static_cast<float>((p[2 + i] >> 4) - 8);
        }
      }
      return;
  }
}

}  // namespace fgemma
