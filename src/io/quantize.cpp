#include "io/quantize.h"

#include <cmath>
#include <cstring>

#include "util/float_types.h"

namespace fgemma {

namespace {

void StoreF16(uint8_t* p, float v) {
  const uint16_t h = F32ToF16(v);
  std::memcpy(p, &h, 2);
}

}  // namespace

void QuantizeRowQ8_0(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / 32; ++b, x += 32, p += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX()
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(p, d);
    for (int j = 0; j < 32; ++j) {
      const float scaled = x[j] * id;  // one float32 product, then round half away from zero
      const float r = std::round(scaled);
      // |r| <= 127 for finite input; non-finite input gives clamped bytes instead of UB.
      const int q = r >= 127.0f ? 127 : (r <= -127.0f ? -127 : (r == r ? static_cast<int>(r) : 0));
      p[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

void QuantizeRowQ4_0(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / 32; ++b, x += 32, p += 18) {
    float amax = 0.0f;
    float max = 0.0f;  // signed value of the first element with the largest magnitude
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(p, d);
    auto nibble = [id](float v) -> uint8_t {
      // ggml's reference: x * id rounded to float32, then + 8.5f rounded to float32, truncated.
      // The two roundings matter (a fused multiply-add differs on ~0.06% of the fixtures' values),
      // and compilers contract a * b + c into an FMA where the target has one (GCC's default for
      // GNU dialects, -ffp-contract=fast), even across statements and casts. Storing the product
      // through a volatile forces its rounding to float32.
      volatile float scaled = v * id;
      const float t = scaled + 8.5f;
      const float q = std::trunc(t);
      // t >= 0.5 for finite input (|x * id| <= 8); NaN gives 0 instead of UB.
      return q >= 15.0f ? 15 : (q >= 0.0f ? static_cast<uint8_t>(q) : 0);
    };
    for (int j = 0; j < 16; ++j) {
      p[2 + j] = static_cast<uint8_t>(nibble(x[j]) | (nibble(x[j + 16]) << 4));
    }
  }
}

void ConvertRowF16(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < n; ++i) StoreF16(p + 2 * i, x[i]);
}

void ConvertRowBf16(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToBf16(x[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

Status QuantizeRow(DType type, const float* x, size_t n, void* out) {
  if (n % DTypeBlockSize(type) != 0) {
    return InvalidArgument("cannot convert a row of " + std::to_string(n) + " values to " + DTypeName(type) +
                           ": not a multiple of its block size " + std::to_string(DTypeBlockSize(type)));
  }
  switch (type) {
    case DType::kF32:
      if (n > 0) std::memcpy(out, x, n * 4);
      break;
    case DType::kF16: ConvertRowF16(x, n, out); break;
    case DType::kBF16: ConvertRowBf16(x, n, out); break;
    case DType::kQ8_0: QuantizeRowQ8_0(x, n, out); break;
    case DType::kQ4_0: QuantizeRowQ4_0(x, n, out); break;
  }
  return Status::Ok();
}

}  // namespace fgemma
