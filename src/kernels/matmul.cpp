// MatMul front end: dtype switch, activation packing, SIMD target selection. The kernels live in
// matmul_float.cpp (f32/f16/bf16), matmul_quant.cpp (q8_0/q4_0) and matmul_kquant.cpp (q4_1, q5_0,
// q5_1, q4_K, q5_K, q6_K), each runtime-dispatched by
// Highway to the best target compiled in (see simd_config.h).
#include "kernels/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul.h"
#include "kernels/matmul_internal.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }
}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/matmul_arm_dot.h"

namespace fgemma {
HWY_EXPORT(TargetNameImpl);

size_t PackedActivationBytes(DType weight_type, size_t cols, size_t num_tokens) {
  // NEON_BF16: bf16 weights take activations rounded to bf16 (kernels/matmul_internal.h).
  if (weight_type == DType::kBF16 && kernels_internal::ArmBf16Active()) {
    return kernels_internal::Bf16RecordBytes(cols) * num_tokens;
  }
  if (!WeightType(weight_type).int8_activations) return 0;
  return kernels_internal::QuantLayoutFor(cols).stride * num_tokens;
}

void PackActivations(DType weight_type, size_t cols, Activations* a, void* scratch) {
#if defined(FGEMMA_ARM_BF16)
  if (weight_type == DType::kBF16 && kernels_internal::ArmBf16Active()) {
    kernels_internal::ArmBf16Pack(cols, a->data, a->stride, a->num_tokens, static_cast<uint8_t*>(scratch));
    a->packed = scratch;
    a->packed_stride = kernels_internal::Bf16RecordBytes(cols);
    return;
  }
#endif
  if (!WeightType(weight_type).int8_activations) {
    a->packed = nullptr;
    a->packed_stride = 0;
    return;
  }
  kernels_internal::PackQuant(cols, a->data, a->stride, a->num_tokens, static_cast<uint8_t*>(scratch));
  a->packed = scratch;
  a->packed_stride = kernels_internal::QuantLayoutFor(cols).stride;
}

void MatMul(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin, size_t row_end) {
  HWY_DASSERT(row_begin <= row_end && row_end <= w.rows);
  if (row_begin >= row_end || a.num_tokens == 0) return;
  if (!WeightType(w.dtype).int8_activations) {
    // bf16 panels on NEON_BF16 read bf16 records (without the copy, e.g. FGEMMA_INTERLEAVE=0, and for
    // every other float matrix: the float kernels on a.data).
    if (w.dtype != DType::kBF16 || w.repacked == nullptr || !kernels_internal::ArmBf16Active()) {
      kernels_internal::MatMulFloat(w, a, y, y_stride, row_begin, row_end);
      return;
    }
    if (a.packed != nullptr) {
      kernels_internal::MatMulArmBf16(w, a, y, y_stride, row_begin, row_end);
      return;
    }
  } else if (a.packed != nullptr) {
    HWY_DASSERT(w.cols % kQuantBlockValues == 0);
    if (kernels_internal::ReadsExpandedRows(w.dtype)) {
      kernels_internal::MatMulKQuant(w, a, y, y_stride, row_begin, row_end);
      return;
    }
    if (w.repacked != nullptr && kernels_internal::ArmDotActive() &&
        row_begin % kernels_internal::ActivePanelFormat().rows(w.dtype) == 0) {
      kernels_internal::MatMulArmDot(w, a, y, y_stride, row_begin, row_end);
      return;
    }
    kernels_internal::MatMulQuant(w, a, y, y_stride, row_begin, row_end);
    return;
  }
  // Not packed by the caller: pack here (correct, but repeated for every slice).
  thread_local std::vector<uint8_t> scratch;
  scratch.resize(PackedActivationBytes(w.dtype, w.cols, a.num_tokens));
  Activations packed = a;
  PackActivations(w.dtype, w.cols, &packed, scratch.data());
  MatMul(w, packed, y, y_stride, row_begin, row_end);
}

namespace {
// The Arm dot-product target as SetKernelTarget forced it: -1 automatic (DetectedArmTarget()),
// else an ArmTarget.
std::atomic<int> forced_arm_target{-1};
ArmTarget RunningArmTarget() {
  const int forced = forced_arm_target.load(std::memory_order_relaxed);
  return forced < 0 ? DetectedArmTarget() : static_cast<ArmTarget>(forced);
}
}  // namespace

bool kernels_internal::ArmDotActive() {
  const ArmTarget t = RunningArmTarget();
  // all read the 4-row panels
  return t == ArmTarget::kNeonDotprod || t == ArmTarget::kNeonI8mm || t == ArmTarget::kNeonBf16;
}
bool kernels_internal::ArmNeonActive() { return RunningArmTarget() != ArmTarget::kNone; }
bool kernels_internal::ArmI8mmActive() {
  const ArmTarget t = RunningArmTarget();
  return t == ArmTarget::kNeonI8mm || t == ArmTarget::kNeonBf16;
}
bool kernels_internal::ArmBf16Active() { return RunningArmTarget() == ArmTarget::kNeonBf16; }

const char* KernelTargetName() {
  if (kernels_internal::ArmDotActive()) return ArmTargetName(RunningArmTarget());
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

namespace {
// Targets compiled in and supported by this CPU, best first; captured before any forcing.
const std::vector<int64_t>& AvailableTargets() {
  static const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  return targets;
}
// The Arm matrix targets above Highway's this CPU runs, best first (i8mm includes the dot product).
std::vector<ArmTarget> ArmMatrixTargets() {
  std::vector<ArmTarget> list;
  const ArmTarget detected = DetectedArmTarget();
  const bool bf16 = detected == ArmTarget::kNeonBf16;
  if (bf16) list.push_back(ArmTarget::kNeonBf16);
  if (bf16 || detected == ArmTarget::kNeonI8mm) list.push_back(ArmTarget::kNeonI8mm);
  if (bf16 || detected == ArmTarget::kNeonI8mm || detected == ArmTarget::kNeonDotprod)
    list.push_back(ArmTarget::kNeonDotprod);
  return list;
}
}  // namespace

std::vector<std::string> KernelTargets() {
  std::vector<std::string> names;
  for (ArmTarget t : ArmMatrixTargets()) names.emplace_back(ArmTargetName(t));
  for (int64_t t : AvailableTargets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

bool SetKernelTarget(const std::string& name) {
  const std::vector<int64_t>& targets = AvailableTargets();
  if (name.empty()) {
    hwy::SetSupportedTargetsForTest(0);
    forced_arm_target = -1;
    return true;
  }
  // The Arm matrix kernels run beside Highway's best target (for the other operations).
  for (ArmTarget t : ArmMatrixTargets()) {
    if (name == ArmTargetName(t)) {
      hwy::SetSupportedTargetsForTest(0);
      forced_arm_target = static_cast<int>(t);
      return true;
    }
  }
  for (int64_t t : targets) {
    if (name == hwy::TargetName(t)) {
      forced_arm_target = static_cast<int>(DetectedArmTarget() == ArmTarget::kNone ? ArmTarget::kNone : ArmTarget::kNeon);
      hwy::SetSupportedTargetsForTest(t);
      return true;
    }
  }
  return false;
}

}  // namespace fgemma
#endif  // HWY_ONCE
