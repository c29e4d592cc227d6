#include "model/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fgemma {

Result<KvCache> KvCache::Create(const ModelConfig& config, size_t context) {
  KvCache cache;
  cache.context_ = context;
  cache.window_ = static_cast<size_t>(config.sliding_window);
  cache.kv_dim_ = static_cast<size_t>(config.kv_dim());
  cache.head_dim_ = static_cast<size_t>(config.head_dim);
  for (int l = 0; l < config.num_layers; ++l) {
    Layer layer;
    layer.kind = config.layer_kinds[static_cast<size_t>(l)];
    layer.rows = RowsOf(layer.kind, cache.window_, context);
    // Checked for overflow of size_t on 32-bit builds.
    const uint64_t elems = static_cast<uint64_t>(layer.rows) * cache.kv_dim_;
    if (elems * sizeof(float) > static_cast<uint64_t>(SIZE_MAX / 4))
      return OutOfRange("KV cache of " + std::to_string(elems * 8) + " bytes for layer " + std::to_string(l) +
                        " does not fit this address space; use a shorter context");
    layer.keys = FloatBuffer(static_cast<size_t>(elems));
    layer.values = FloatBuffer(static_cast<size_t>(elems));
    cache.layers_.push_back(std::move(layer));
  }
  size_t sliding = 0;
  for (const Layer& lc : cache.layers_) sliding += lc.kind == LayerKind::kSliding;
  cache.undo_ = FloatBuffer(sliding * 2 * kMaxUndoRows * cache.kv_dim_);
  return cache;
}

uint64_t KvCache::BytesFor(const ModelConfig& config, size_t context) {
  const uint64_t kv_dim = static_cast<uint64_t>(config.kv_dim());
  const size_t window = static_cast<size_t>(config.sliding_window);
  uint64_t floats = 0;
  for (int l = 0; l < config.num_layers; ++l) {
    const LayerKind kind = config.layer_kinds[static_cast<size_t>(l)];
    floats += 2 * static_cast<uint64_t>(RowsOf(kind, window, context)) * kv_dim;  // keys, values
    if (kind == LayerKind::kSliding) floats += 2 * kMaxUndoRows * kv_dim;
  }
  return floats * sizeof(float);
}

void KvCache::Commit(int layer, size_t start, size_t n, const float* k, const float* v) {
  written_end_ = std::max(written_end_, start + n);
  Layer& lc = layers_[static_cast<size_t>(layer)];
  const size_t KV = kv_dim_;
  if (lc.kind == LayerKind::kGlobal) {
    std::memcpy(lc.keys.data() + start * KV, k, n * KV * sizeof(float));
    std::memcpy(lc.values.data() + start * KV, v, n * KV * sizeof(float));
    return;
  }
  const size_t first = n > lc.rows ? n - lc.rows : 0;
  for (size_t t = first; t < n; ++t) {
    const size_t row = (start + t) % lc.rows;
    std::memcpy(lc.keys.data() + row * KV, k + t * KV, KV * sizeof(float));
    std::memcpy(lc.values.data() + row * KV, v + t * KV, KV * sizeof(float));
  }
}

KvCache::Visible KvCache::VisibleTo(int layer, size_t pos, size_t chunk_start, const float* chunk_k,
                                    const float* chunk_v, size_t kv_head) const {
  const Layer& lc = layers_[static_cast<size_t>(layer)];
  const size_t KV = kv_dim_, column = kv_head * head_dim_;
  const bool sliding = lc.kind == LayerKind::kSliding;
  const size_t lo = sliding && pos + 1 > window_ ? pos + 1 - window_ : 0;
  Visible out;
  out.count = pos + 1 - lo;
  auto add = [&](const float* k, const float* v, size_t rows) {
    if (rows == 0) return;
    out.keys[out.runs] = {k + column, rows};
    out.values[out.runs] = {v + column, rows};
    ++out.runs;
  };
  if (!sliding) {
    add(lc.keys.data() + lo * KV, lc.values.data() + lo * KV, out.count);
    return out;
  }
  const size_t cached_end = std::min(chunk_start, pos + 1);
  for (size_t j = lo; j < cached_end;) {
    const size_t row = j % lc.rows, len = std::min(cached_end - j, lc.rows - row);
    add(lc.keys.data() + row * KV, lc.values.data() + row * KV, len);
    j += len;
  }
  const size_t first = std::max(lo, chunk_start);
  add(chunk_k + (first - chunk_start) * KV, chunk_v + (first - chunk_start) * KV, pos + 1 - first);
  return out;
}

uint64_t KvCache::bytes(LayerKind kind) const {
  uint64_t total = 0;
  for (const Layer& lc : layers_) {
    if (lc.kind == kind) total += 2ull * lc.keys.size() * sizeof(float);
  }
  return total;
}

void KvCache::CopyFrom(const KvCache& other, size_t n) {
  written_end_ = n;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& src = other.layers_[l];
    Layer& dst = layers_[l];
    // Both rings hold position p at p % window (same model), so the first rows are the live ones
    // in either; a ring shortened by a small context holds no position beyond it.
    const size_t rows = std::min(other.LiveRows(src, n), LiveRows(dst, n));
    std::memcpy(dst.keys.data(), src.keys.data(), rows * kv_dim_ * sizeof(float));
    std::memcpy(dst.values.data(), src.values.data(), rows * kv_dim_ * sizeof(float));
  }
}

bool KvCache::RollBack(size_t current, size_t to, const KvCache& base, size_t base_n) {
  if (base.layers_.size() != layers_.size() || base_n > to || to > current) return false;
  // Rows written past `current` (a speculative batch not taken back) need repair as much as those
  // before it; repairing a row no position overwrote puts back what it holds.
  const size_t end = std::max(current, written_end_);
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].kind == LayerKind::kSliding && (base.layers_[l].rows != layers_[l].rows || end > base_n + layers_[l].rows))
      return false;
  }
  const size_t KV = kv_dim_;
  for (size_t l = 0; l < layers_.size(); ++l) {
    Layer& lc = layers_[l];
    if (lc.kind != LayerKind::kSliding) continue;
    // Position p took the row of p - rows, which (p >= base_n, p < base_n + rows) base still holds.
    for (size_t p = std::max(to, lc.rows); p < end; ++p) {
      const size_t row = p % lc.rows;
      std::memcpy(lc.keys.data() + row * KV, base.layers_[l].keys.data() + row * KV, KV * sizeof(float));
      std::memcpy(lc.values.data() + row * KV, base.layers_[l].values.data() + row * KV, KV * sizeof(float));
    }
  }
  undo_count_ = 0;
  written_end_ = to;
  return true;
}

uint64_t KvCache::StateBytes(size_t n) const {
  uint64_t total = 0;
  for (const Layer& lc : layers_) total += 2ull * LiveRows(lc, n) * static_cast<uint64_t>(kv_dim_) * sizeof(float);
  return total;
}

void KvCache::Export(size_t n, std::string* out) const {
  out->reserve(out->size() + StateBytes(n));
  for (const Layer& lc : layers_) {
    const size_t bytes = LiveRows(lc, n) * kv_dim_ * sizeof(float);
    out->append(reinterpret_cast<const char*>(lc.keys.data()), bytes);
    out->append(reinterpret_cast<const char*>(lc.values.data()), bytes);
  }
}

namespace {

// |key|, |value| a state may hold: real ones stay within a few hundred (projections of RMS-normed
// rows); far beyond, the state is not the model's. Refusing one only costs a rebuild.
constexpr float kMaxStateMagnitude = 1e6f;

bool PlausibleState(const float* values, size_t count) {
  bool ok = true;
  for (size_t i = 0; i < count; ++i) ok &= std::fabs(values[i]) <= kMaxStateMagnitude;  // false for NaN
  return ok;
}

}  // namespace

Status KvCache::Import(size_t n, const uint8_t* data, size_t size) {
  if (n > context_) return OutOfRange("cached state of " + std::to_string(n) + " positions exceeds the context of " + std::to_string(context_));
  if (size != StateBytes(n)) return CorruptFile("cached state holds " + std::to_string(size) + " bytes, expected " + std::to_string(StateBytes(n)));
  written_end_ = n;
  for (Layer& lc : layers_) {
    const size_t count = LiveRows(lc, n) * kv_dim_, bytes = count * sizeof(float);
    std::memcpy(lc.keys.data(), data, bytes);
    std::memcpy(lc.values.data(), data + bytes, bytes);
    data += 2 * bytes;
    // A state no forward pass computes (a NaN, an infinity or a value past any activation),
    // however well its checksum holds, would make every later head output garbage.
    if (!PlausibleState(lc.keys.data(), count) || !PlausibleState(lc.values.data(), count)) {
      written_end_ = 0;
      return CorruptFile("cached state of layer " + std::to_string(&lc - layers_.data()) +
                         " holds a non-finite or absurd value (beyond +-1e6): not a state the model computed");
    }
  }
  return Status::Ok();
}

Status KvCache::Zero(size_t n) {
  if (n > context_) return OutOfRange(std::to_string(n) + " positions exceed the context of " + std::to_string(context_));
  written_end_ = n;
  for (Layer& lc : layers_) {
    const size_t count = LiveRows(lc, n) * kv_dim_;
    std::fill(lc.keys.data(), lc.keys.data() + count, 0.0f);
    std::fill(lc.values.data(), lc.values.data() + count, 0.0f);
  }
  return Status::Ok();
}

size_t KvCache::min_ring_rows() const {
  size_t rows = context_;
  for (const Layer& lc : layers_) {
    if (lc.kind == LayerKind::kSliding) rows = std::min(rows, lc.rows);
  }
  return rows;
}

void KvCache::SaveRing(size_t start, size_t n) {
  n = std::min({n, kMaxUndoRows, min_ring_rows()});
  undo_start_ = start;
  undo_count_ = n;
  const size_t KV = kv_dim_;
  float* dst = undo_.data();
  for (const Layer& lc : layers_) {
    if (lc.kind != LayerKind::kSliding) continue;
    for (size_t i = 0; i < n; ++i) {
      const size_t row = (start + i) % lc.rows;
      std::memcpy(dst + i * KV, lc.keys.data() + row * KV, KV * sizeof(float));
      std::memcpy(dst + (kMaxUndoRows + i) * KV, lc.values.data() + row * KV, KV * sizeof(float));
    }
    dst += 2 * kMaxUndoRows * KV;
  }
}

void KvCache::RestoreRing(size_t from, size_t to) {
  from = std::max(from, undo_start_);
  to = std::min(to, undo_start_ + undo_count_);
  const size_t KV = kv_dim_;
  const float* src = undo_.data();
  for (Layer& lc : layers_) {
    if (lc.kind != LayerKind::kSliding) continue;
    for (size_t p = from; p < to; ++p) {
      const size_t i = p - undo_start_, row = p % lc.rows;
      std::memcpy(lc.keys.data() + row * KV, src + i * KV, KV * sizeof(float));
      std::memcpy(lc.values.data() + row * KV, src + (kMaxUndoRows + i) * KV, KV * sizeof(float));
    }
    src += 2 * kMaxUndoRows * KV;
  }
}

}  // namespace fgemma
