#include "runtime/pass_batcher.h"

#include <algorithm>

namespace fgemma {

namespace {
constexpr size_t kMaxHeadBatch = LmHead::kMaxMany;  // full-vocabulary heads computed in one read of the embedding
}  // namespace

// One session's Evaluate, waiting on the batcher (lives on that session's stack until done).
struct PassBatcher::Pending {
  std::span<const int32_t> tokens;
  size_t start = 0;
  KvCache* cache = nullptr;
  LmHead* head = nullptr;
  std::span<HeadRequest> heads;
  size_t taken = 0;     // tokens handed to passes so far
  size_t finished = 0;  // tokens whose pass (and heads) are complete
};

struct PassBatcher::Member {
  Pending* pending;
  size_t offset;  // first token of the pending evaluation in this pass
  size_t count;   // its tokens in this pass
  size_t row;     // its first row of the pass
};

Result<std::shared_ptr<PassBatcher>> PassBatcher::Create(std::shared_ptr<const Model> model, size_t max_batch,
                                                         size_t context, std::shared_ptr<ThreadPool> pool,
                                                         std::shared_ptr<const LoraAdapter> lora) {
  if (!model || !pool) return InvalidArgument("a pass batcher needs a model and a thread pool");
  auto b = std::shared_ptr<PassBatcher>(new PassBatcher());
  ForwardOptions fo;
  fo.max_batch = std::max<size_t>(1, max_batch);
  fo.context = context;
  fo.lora = std::move(lora);
  FGEMMA_TRY(b->forward_, Gemma3Forward::Create(*model, fo, pool->num_threads()));
  b->head_ = std::make_unique<LmHead>(*model, pool->num_threads());
  b->model_ = std::move(model);
  b->pool_ = std::move(pool);
  b->queue_.reserve(256);
  b->segments_.reserve(fo.max_batch);
  b->members_.reserve(fo.max_batch);
  b->full_hidden_.reserve(kMaxHeadBatch);
  b->full_requests_.reserve(kMaxHeadBatch);
  return b;
}

void PassBatcher::Evaluate(std::span<const int32_t> tokens, size_t start, KvCache& cache, LmHead& head,
                           std::span<HeadRequest> heads) {
  if (tokens.empty()) return;
  Pending me{tokens, start, &cache, &head, heads};
  std::unique_lock lock(mu_);
  queue_.push_back(&me);
  cv_.notify_all();  // a leader may be gathering
  while (me.finished < me.tokens.size()) {
    if (running_) {
      cv_.wait(lock);
      continue;
    }
    // Lead the next pass: the pending work of every waiting session, first come first served,
    // once every active session has queued (they run in step), or after gather_wait_.
    running_ = true;
    if (queue_.size() < active_)
      cv_.wait_for(lock, gather_wait_, [&] { return queue_.size() >= active_; });
    segments_.clear();
    members_.clear();
    const size_t max_rows = forward_->max_batch();
    size_t rows = 0;
    for (Pending* p : queue_) {
      const size_t take = std::min(p->tokens.size() - p->taken, max_rows - rows);
      if (take == 0) continue;
      segments_.push_back({p->tokens.subspan(p->taken, take), p->start + p->taken, p->cache});
      members_.push_back({p, p->taken, take, rows});
      p->taken += take;
      rows += take;
      if (rows == max_rows) break;
    }
    lock.unlock();
    forward_->Run(segments_, *pool_);
    ComputeHeads();
    lock.lock();
    for (const Member& m : members_) m.pending->finished += m.count;
    std::erase_if(queue_, [](const Pending* p) { return p->finished == p->tokens.size(); });
    ++stats_.passes;
    stats_.rows += rows;
    stats_.shared += members_.size() > 1;
    stats_.max_sessions = std::max<uint64_t>(stats_.max_sessions, members_.size());
    running_ = false;
    cv_.notify_all();
  }
}

void PassBatcher::ComputeHeads() {
  // Candidate heads (constrained decoding) with their session's head, full-vocabulary ones
  // gathered and computed together, in groups of kMaxHeadBatch.
  auto flush = [&] {
    if (full_requests_.size() == 1)
      head_->Compute(full_hidden_[0], *full_requests_[0], *pool_);
    else
      head_->ComputeMany(full_hidden_, full_requests_, *pool_);
    full_hidden_.clear();
    full_requests_.clear();
  };
  for (const Member& m : members_) {
    for (HeadRequest& h : m.pending->heads) {
      if (h.index < m.offset || h.index >= m.offset + m.count) continue;
      const float* hidden = forward_->final_hidden(m.row + (h.index - m.offset));
      if (!h.candidates.empty()) {
        m.pending->head->Compute(hidden, h, *pool_);
        continue;
      }
      full_hidden_.push_back(hidden);
      full_requests_.push_back(&h);
      if (full_requests_.size() == kMaxHeadBatch) flush();
    }
  }
  if (!full_requests_.empty()) flush();
}

PassBatcher::Participation::Participation(PassBatcher* b) : batcher_(b) {
  std::lock_guard lock(b->mu_);
  ++b->active_;
}

PassBatcher::Participation::~Participation() {
  std::lock_guard lock(batcher_->mu_);
  --batcher_->active_;
  batcher_->cv_.notify_all();
}

PassBatcher::Stats PassBatcher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace fgemma
