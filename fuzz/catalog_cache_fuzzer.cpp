// libFuzzer harness for catalog cache files (LoadCatalogCache) on the tiny-mqa-f32 fixture model
// (session context 64). The first input byte picks the mode:
//   even: the rest is the whole file (header checks: magic, version, fingerprint, numerics, sizes,
//         checksum);
//   odd:  the rest is a payload wrapped in a valid header for this model and prefix (positions =
//         the second byte), so the fuzzer reaches Session::ImportState past the checksum.
// A cache that loads must leave a usable session: one more token is evaluated.
// Seeds: fuzz/corpus/catalog_cache/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "model/model.h"
#include "runtime/catalog_cache.h"
#include "runtime/session.h"
#include "util/hash.h"

namespace {

constexpr uint64_t kPrefixHash = 0x0123456789abcdefull;

fgemma::Session& TheSession() {
  static std::unique_ptr<fgemma::Session> session = [] {
    auto model = fgemma::Model::Load(FGEMMA_SHARED_DIR "/fixtures/models/tiny-mqa-f32");
    if (!model.ok()) {
      std::fprintf(stderr, "cannot load the fixture model: %s\n", model.status().ToString().c_str());
      std::abort();
    }
    fgemma::SessionOptions options;
    options.context = 64;
    options.threads = 1;
    auto s = fgemma::Session::Create(std::shared_ptr<const fgemma::Model>(std::move(model.value())), options);
    if (!s.ok()) std::abort();
    return std::move(s.value());
  }();
  return *session;
}

void PutU64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)TheSession();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  fgemma::Session& session = TheSession();
  session.Reset();
  const std::string path = fgemma::fuzz::ScratchDir() + "/catalog.fgkv";
  size_t positions = data[1];
  if (data[0] % 2 == 0) {
    fgemma::fuzz::WriteFileOrDie(path, data + 1, size - 1);
  } else {
    const std::string payload(reinterpret_cast<const char*>(data + 2), size - 2);
    std::string file("FGKVCACH", 8);
    file += std::string("\x02\x00\x00\x00", 4);
    PutU64(&file, session.model().fingerprint());
    PutU64(&file, fgemma::CatalogNumericsKey(session));
    PutU64(&file, kPrefixHash);
    PutU64(&file, positions);
    PutU64(&file, payload.size());
    PutU64(&file, fgemma::Hash64(payload));
    file += payload;
    fgemma::fuzz::WriteFileOrDie(path, reinterpret_cast<const uint8_t*>(file.data()), file.size());
  }
  const fgemma::Status st = fgemma::LoadCatalogCache(path, session, kPrefixHash, positions);
  if (st.ok() && session.position() < session.context()) {
    const int32_t token = 2;
    if (!session.Evaluate(std::span<const int32_t>(&token, 1)).ok()) std::abort();
  }
  return 0;
}
