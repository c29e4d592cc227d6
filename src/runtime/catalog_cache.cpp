#include "runtime/catalog_cache.h"

#include <cstdio>
#include <cstring>

#include "kernels/matmul.h"
#include "util/file_replace.h"
#include "util/hash.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

constexpr char kMagic[8] = {'F', 'G', 'K', 'V', 'C', 'A', 'C', 'H'};
constexpr uint32_t kVersion = 6;  // 2: the numerics field; 3: the LoRA adapter field; 4: x86 vector softmax;
                                  // 5: AVX2 q8_0 / q4_0 in 8-row panels (a per-block fold); 6: AVX2 q6_K too
constexpr size_t kHeaderBytes = 8 + 4 + 8 * 7;

void PutU64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

uint64_t PrefixHash(const std::vector<int32_t>& tokens) { return Hash64(tokens.data(), tokens.size() * sizeof(int32_t)); }

uint64_t CatalogNumericsKey(const Session& session) {
  // The target's kernels, and the layout they read the weights in (kernels/weight_prep.h; the
  // stored one with FGEMMA_INTERLEAVE=0), e.g. "AVX3_DL+interleaved".
  std::string target = KernelTargetName();
  if (!session.model().weight_layout().empty()) target += "+" + session.model().weight_layout();
  return (Hash64(target.data(), target.size()) & 0xffffffff00000000ull) | static_cast<uint32_t>(session.threads());
}

Status SaveCatalogCache(const std::string& path, const Session& session, uint64_t prefix_hash) {
  std::string payload;
  session.ExportState(&payload);
  std::string file(kMagic, 8);
  for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>(kVersion >> (8 * i)));
  PutU64(&file, session.model().fingerprint());
  PutU64(&file, CatalogNumericsKey(session));
  PutU64(&file, prefix_hash);
  PutU64(&file, session.position());
  PutU64(&file, payload.size());
  PutU64(&file, Hash64(payload));
  PutU64(&file, session.lora_fingerprint());
  file += payload;
  // A fresh temporary beside the cache, renamed over it: a crash never leaves half a cache, and no
  // link or device at the path (or at any fixed temporary name) is written through.
  return ReplaceFileContents(path, file);
}

Status LoadCatalogCache(const std::string& path, Session& session, uint64_t prefix_hash, size_t prefix_tokens) {
  FGEMMA_TRY(MappedFile f, MappedFile::Open(path));
  const uint8_t* p = f.data();
  if (f.size() < kHeaderBytes || std::memcmp(p, kMagic, 8) != 0) return CorruptFile(path + ": not an fgemma catalog cache");
  const uint32_t version = p[8] | p[9] << 8 | p[10] << 16 | static_cast<uint32_t>(p[11]) << 24;
  if (version != kVersion)
    return Unsupported(path + ": cache format version " + std::to_string(version) + " (expected " +
                       std::to_string(kVersion) + ")");
  if (GetU64(p + 12) != session.model().fingerprint()) return InvalidArgument(path + ": cache was built for a different model");
  const uint64_t numerics = GetU64(p + 20), ours = CatalogNumericsKey(session);
  if (numerics != ours) {
    if ((numerics >> 32) != (ours >> 32))
      return InvalidArgument(path + ": cache was built with kernels for another SIMD target or weight layout than " +
                             KernelTargetName() + (session.model().weight_layout().empty() ? "" : " (" + session.model().weight_layout() + ")") +
                             " (its values would differ in the last bits from this session's prefill)");
    return InvalidArgument(path + ": cache was built with " + std::to_string(static_cast<uint32_t>(numerics)) +
                           " threads, this session uses " + std::to_string(session.threads()) +
                           " (its values would differ in the last bits from this session's prefill)");
  }
  // The adapter changes every value after the first adapted projection: 0 = none, else its
  // fingerprint (content and scale).
  const uint64_t adapter = GetU64(p + 60), our_adapter = session.lora_fingerprint();
  if (adapter != our_adapter) {
    if (adapter == 0) return InvalidArgument(path + ": cache was built without a LoRA adapter, this session uses " + session.lora()->dir());
    if (our_adapter == 0) return InvalidArgument(path + ": cache was built with a LoRA adapter, this session has none");
    return InvalidArgument(path + ": cache was built with another LoRA adapter or scale than " + session.lora()->dir());
  }
  if (GetU64(p + 28) != prefix_hash) return InvalidArgument(path + ": cache was built for a different tool catalog or system prompt");
  const uint64_t positions = GetU64(p + 36), payload = GetU64(p + 44), checksum = GetU64(p + 52);
  if (positions != prefix_tokens) return CorruptFile(path + ": cache holds " + std::to_string(positions) + " positions, the prefix has " + std::to_string(prefix_tokens));
  if (payload != f.size() - kHeaderBytes) return CorruptFile(path + ": cache payload size does not match the file (truncated?)");
  if (Hash64(p + kHeaderBytes, static_cast<size_t>(payload)) != checksum) return CorruptFile(path + ": cache checksum mismatch (corrupt file)");
  return session.ImportState(static_cast<size_t>(positions), p + kHeaderBytes, static_cast<size_t>(payload));
}

}  // namespace fgemma
