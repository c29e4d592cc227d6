// Version, status names and the thread-local error message of the C API.
#include <algorithm>
#include <cstring>

#include "capi/capi_internal.h"
#include "kernels/matmul.h"
#include "util/version.h"

namespace fgemma::capi {
namespace {
thread_local std::string t_last_error;
}

fgemma_status Fail(fgemma_status status, const std::string& message) {
  t_last_error = message;
  return status;
}

// Every ErrorCode is the fgemma_status of the same meaning, so a Status converts by value.
#define FGEMMA_SAME_CODE(cpp, c) static_assert(static_cast<int>(ErrorCode::cpp) == c, #cpp " must equal " #c)
FGEMMA_SAME_CODE(kOk, FGEMMA_OK);
FGEMMA_SAME_CODE(kInvalidArgument, FGEMMA_ERR_INVALID_ARGUMENT);
FGEMMA_SAME_CODE(kNotFound, FGEMMA_ERR_NOT_FOUND);
FGEMMA_SAME_CODE(kCorruptFile, FGEMMA_ERR_CORRUPT_FILE);
FGEMMA_SAME_CODE(kUnsupported, FGEMMA_ERR_UNSUPPORTED);
FGEMMA_SAME_CODE(kOutOfRange, FGEMMA_ERR_OUT_OF_RANGE);
FGEMMA_SAME_CODE(kIoError, FGEMMA_ERR_IO);
FGEMMA_SAME_CODE(kOutOfMemory, FGEMMA_ERR_OUT_OF_MEMORY);
FGEMMA_SAME_CODE(kCancelled, FGEMMA_ERR_CANCELLED);
FGEMMA_SAME_CODE(kInternal, FGEMMA_ERR_INTERNAL);
static_assert(static_cast<int>(ErrorCode::kLast) == FGEMMA_ERR_INTERNAL,
              "a new ErrorCode needs its fgemma_status (include/fgemma/fgemma.h) and a line above");
#undef FGEMMA_SAME_CODE

fgemma_status Fail(const Status& status) {
  return Fail(static_cast<fgemma_status>(static_cast<int>(status.code())), status.ToString());
}

void ClearError() { t_last_error.clear(); }

int64_t CopyOut(const std::string& text, char* buf, size_t cap) {
  if (buf && cap > 0) {
    const size_t n = std::min(text.size(), cap - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int64_t>(text.size());
}

Result<LoraSpec> LoraSpecOf(const char* path, float scale, const char* what) {
  if (path == nullptr) return LoraSpec{"", 1.0f};
  if (*path == '\0') return InvalidArgument(std::string(what) + ": lora_path is empty (NULL for no adapter)");
  return LoraSpec{path, scale};
}

}  // namespace fgemma::capi

using namespace fgemma::capi;

extern "C" {

FGEMMA_API int32_t fgemma_abi_version(void) { return FGEMMA_ABI_VERSION; }
FGEMMA_API const char* fgemma_version(void) { return fgemma::VersionString(); }

FGEMMA_API const char* fgemma_kernel_target(void) { return fgemma::KernelTargetName(); }

FGEMMA_API const char* fgemma_status_name(fgemma_status status) {
  switch (status) {
    case FGEMMA_OK: return "ok";
    case FGEMMA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case FGEMMA_ERR_NOT_FOUND: return "not found";
    case FGEMMA_ERR_CORRUPT_FILE: return "corrupt file";
    case FGEMMA_ERR_UNSUPPORTED: return "unsupported";
    case FGEMMA_ERR_OUT_OF_RANGE: return "out of range";
    case FGEMMA_ERR_IO: return "I/O error";
    case FGEMMA_ERR_OUT_OF_MEMORY: return "out of memory";
    case FGEMMA_ERR_CANCELLED: return "cancelled";
    case FGEMMA_ERR_INTERNAL: return "internal error";
    case FGEMMA_ERR_BUDGET: return "budget exhausted";
    case FGEMMA_STATUS_FORCE_32BIT: break;
  }
  return "unknown status";
}

FGEMMA_API const char* fgemma_last_error(void) {
  return t_last_error.c_str();
}

}  // extern "C"
