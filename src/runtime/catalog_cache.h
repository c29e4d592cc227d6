// Cache files for a prefilled tool catalog: the KV state after BOS + the developer turn.
//
// Layout (little-endian): "FGKVCACH" | u32 version | u64 model fingerprint | u64 prefix hash |
// u64 positions | u64 payload bytes | u64 payload checksum | payload (Session::ExportState).
// A file is trusted only when every field matches the model and prefix at hand and the checksum
// holds; anything else is reported (so the caller can warn and rebuild), never used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "util/status.h"

namespace fgemma {

uint64_t PrefixHash(const std::vector<int32_t>& prefix_tokens);

Status SaveCatalogCache(const std::string& path, const Session& session, uint64_t prefix_hash);
// Restores `session` from `path` if the file was written for this model and prefix. Errors say why
// the file cannot be used (missing, foreign model, other catalog, corrupt).
Status LoadCatalogCache(const std::string& path, Session& session, uint64_t prefix_hash, size_t prefix_tokens);

}  // namespace fgemma
