// Cache files for a prefilled tool catalog: the KV state after BOS + the developer turn.
//
// Layout (little-endian): "FGKVCACH" | u32 version | u64 model fingerprint | u64 numerics |
// u64 prefix hash | u64 positions | u64 payload bytes | u64 payload checksum | u64 LoRA adapter
// (0 = none, else LoraAdapter::fingerprint: its content and scale) | payload (Session::ExportState).
// A file is trusted only when every field matches the model and prefix at hand and the checksum
// holds; anything else is reported (so the caller can warn and rebuild), never used.
//
// `numerics` binds the file to how its values were computed: the forward pass's thread count and
// the SIMD target of the kernels. Both change the last bits of the KV values (the thread count
// sets the row blocks of each matrix product, and a row's sum is reduced differently depending on
// its place in the kernel's register tile), so a state prefilled under other numerics differs
// from a fresh prefill here and could, at a near-tie, change a greedy choice: a caller restoring
// it would not answer like one that prefilled (e.g. the server's first pooled session, which
// reads the cache file, and the others, which prefill).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "util/status.h"

namespace fgemma {

uint64_t PrefixHash(const std::vector<int32_t>& prefix_tokens);
// The numerics field for states computed by `session`: its thread count (low 32 bits) and a hash
// of the kernels' SIMD target name (high 32 bits).
uint64_t CatalogNumericsKey(const Session& session);

Status SaveCatalogCache(const std::string& path, const Session& session, uint64_t prefix_hash);
// Restores `session` from `path` if the file was written for this model, numerics and prefix.
// Errors say why the file cannot be used (missing, foreign model, other numerics, other catalog,
// corrupt).
Status LoadCatalogCache(const std::string& path, Session& session, uint64_t prefix_hash, size_t prefix_tokens);

}  // namespace fgemma
