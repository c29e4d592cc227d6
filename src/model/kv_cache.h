// The KV cache of one sequence: every layer's keys and values by position, and its state for
// restoring a prefix (catalog cache, copies between sessions).
//
//   sliding layers: a ring of `window` rows (fewer if the context is shorter); position p lives in
//                   row p % rows, so only the last `window` positions are kept
//   global layers:  `context` rows; position p lives in row p
//
// The rows of positions [0, n) are the first min(n, rows) of every layer in both kinds, which is
// what makes the state of a prefix a plain prefix of each layer's storage.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "model/config.h"
#include "model/float_buffer.h"
#include "util/status.h"

namespace fgemma {

class KvCache {
 public:
  KvCache() = default;  // no layers; Create makes a usable cache
  // Storage for `context` positions (<= max_position_embeddings, checked by the caller); fails
  // when a layer does not fit this address space (32-bit builds).
  static Result<KvCache> Create(const ModelConfig& config, size_t context);
  // The bytes Create(config, context) allocates (keys, values and the undo rows), without
  // allocating them: what a server sizes its sessions by.
  static uint64_t BytesFor(const ModelConfig& config, size_t context);
  // The rows a layer of `kind` keeps: every position on a global layer, a ring of the window on a
  // sliding one.
  static size_t RowsOf(LayerKind kind, size_t window, size_t context) {
    return kind == LayerKind::kGlobal ? context : std::min(window, context);
  }

  size_t context() const { return context_; }
  LayerKind kind(int layer) const { return layers_[static_cast<size_t>(layer)].kind; }

  // Stores the keys and values of a chunk at positions [start, start + n), k and v [n, kv_dim]:
  // all of them on a global layer, the last min(n, window) on a sliding one (earlier ones would
  // be overwritten in the ring by later positions of the same chunk).
  void Commit(int layer, size_t start, size_t n, const float* k, const float* v);

  // What a query at position `pos` of a chunk starting at `chunk_start` attends to: positions
  // [pos + 1 - count, pos] (the causal window), as at most three contiguous runs of rows of kv
  // head `kv_head` (rows kv_dim floats apart), in position order.
  //   global:  all from the cache, which must already hold the chunk (Commit before attending);
  //   sliding: positions before the chunk from the ring (wrapping at most once), the chunk's own
  //            from chunk_k/chunk_v [n, kv_dim] (Commit after attending: the ring row of a later
  //            chunk position may still be needed by an earlier query).
  struct Visible {
    KvRun keys[3], values[3];
    size_t runs = 0;
    size_t count = 0;
  };
  Visible VisibleTo(int layer, size_t pos, size_t chunk_start, const float* chunk_k, const float* chunk_v,
                    size_t kv_head) const;

  // Bytes of storage of the layers of one kind (for reports).
  uint64_t bytes(LayerKind kind) const;

  // State of positions [0, n): only the rows that hold them, min(n, rows) per layer.
  // Copies it from `other` (same model; its context may differ).
  void CopyFrom(const KvCache& other, size_t n);
  // Takes the state after `current` positions back to the state after `to` (base_n <= to <= current),
  // where this cache holds a copy of `base` after base_n positions (CopyFrom, same model and ring
  // sizes) plus positions written since. A global layer needs nothing (rows past `to` are never
  // read before they are written again); a sliding ring gets back from `base` the rows that
  // positions [to, current) overwrote. Cheaper than a whole CopyFrom by the ring's length over
  // the positions taken back. Possible while no ring wrapped since the copy (current <= base_n +
  // its rows; counting any position written past `current`): false otherwise, with nothing
  // changed. Discards the SaveRing backup.
  bool RollBack(size_t current, size_t to, const KvCache& base, size_t base_n);
  // As bytes (cache files): Export appends StateBytes(n) bytes, Import reads exactly that back.
  uint64_t StateBytes(size_t n) const;
  void Export(size_t n, std::string* out) const;
  Status Import(size_t n, const uint8_t* data, size_t size);
  // Zero keys and values for positions [0, n) without computing them (benchmarks of decode at a
  // long context: the attention work is that of a real prefill, the outputs are meaningless).
  Status Zero(size_t n);

  // Undo of speculative positions (drafted tokens a verification rejects). A global layer needs
  // none: rows past the position are never read and get overwritten. A sliding ring does: writing
  // position p replaces the row of p - rows, which a query at a position before p still attends
  // to once p is rejected. SaveRing(start, n) copies the ring rows that positions [start, start+n)
  // will occupy; RestoreRing(from, to) puts back those of positions [from, to) (within the saved
  // range). n is at most kMaxUndoRows and at most min_ring_rows() (a chunk that wraps the ring by
  // itself overwrites rows no backup holds).
  static constexpr size_t kMaxUndoRows = 32;
  size_t min_ring_rows() const;
  void SaveRing(size_t start, size_t n);
  void RestoreRing(size_t from, size_t to);
  size_t undo_start() const { return undo_start_; }
  size_t undo_count() const { return undo_count_; }

 private:
  struct Layer {
    LayerKind kind = LayerKind::kSliding;
    size_t rows = 0;     // window (sliding, at most the context) or context (global)
    FloatBuffer keys;    // [rows, kv_dim]
    FloatBuffer values;  // [rows, kv_dim]
  };
  // Rows (hence floats, times kv_dim) of a layer that hold positions [0, n).
  size_t LiveRows(const Layer& layer, size_t n) const { return n < layer.rows ? n : layer.rows; }

  std::vector<Layer> layers_;
  size_t context_ = 0;
  size_t window_ = 0;     // the model's sliding window (a ring may be shorter, never longer)
  size_t kv_dim_ = 0;     // floats per row: kv_heads * head_dim
  size_t head_dim_ = 0;
  // SaveRing's copies: per sliding layer, kMaxUndoRows rows of keys then as many of values.
  FloatBuffer undo_;
  size_t undo_start_ = 0, undo_count_ = 0;
  // One past the last position Commit wrote since the state was copied, imported or zeroed
  // (RollBack repairs the ring rows up to it).
  size_t written_end_ = 0;
};

}  // namespace fgemma
