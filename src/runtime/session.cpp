#include "runtime/session.h"

#include <algorithm>

#include "util/run_limits.h"

namespace fgemma {

Result<std::unique_ptr<Session>> Session::Create(std::shared_ptr<const Model> model, const SessionOptions& options) {
  if (!model) return InvalidArgument("session needs a model");
  FGEMMA_RETURN_IF_ERROR(CheckThreadCount(options.threads, "threads"));
  if (options.pool && options.threads > 0 && options.threads != options.pool->num_threads())
    return InvalidArgument("session asks for " + std::to_string(options.threads) + " threads but its pool has " +
                           std::to_string(options.pool->num_threads()));
  auto s = std::unique_ptr<Session>(new Session());
  const int threads = options.batcher       ? options.batcher->pool()->num_threads()
                      : options.pool          ? options.pool->num_threads()
                      : options.threads > 0 ? options.threads
                                            : ThreadPool::DefaultThreads();
  if (options.batcher) {
    if (&options.batcher->model() != model.get()) return InvalidArgument("session and pass batcher have different models");
    if (options.pool && options.pool != options.batcher->pool())
      return InvalidArgument("session and pass batcher must share one thread pool");
    if (options.threads > 0 && options.threads != options.batcher->pool()->num_threads())
      return InvalidArgument("session asks for " + std::to_string(options.threads) + " threads but its pass batcher has " +
                             std::to_string(options.batcher->pool()->num_threads()));
    if (options.batcher->lora() != options.lora.get())
      return InvalidArgument("a session's LoRA adapter must be its pass batcher's (the batcher's passes apply it)");
    const size_t context = options.context ? options.context : static_cast<size_t>(model->config().max_position_embeddings);
    if (context > options.batcher->context())
      return InvalidArgument("session context " + std::to_string(context) + " exceeds its pass batcher's " +
                             std::to_string(options.batcher->context()));
  }
  ForwardOptions fo;
  fo.context = options.context;
  // Batched, the batcher runs the passes: this session's own forward buffers stay one row.
  fo.max_batch = options.batcher ? 1 : options.max_batch;
  fo.lora = options.lora;
  FGEMMA_TRY(s->forward_, Gemma3Forward::Create(*model, fo, threads));
  FGEMMA_TRY(s->cache_, KvCache::Create(model->config(), s->forward_->context()));
  s->pool_ = options.batcher ? options.batcher->pool() : options.pool ? options.pool : SharedThreadPool(threads);
  s->batcher_ = options.batcher;
  s->max_batch_ = options.batcher ? std::min(std::max<size_t>(1, options.max_batch), options.batcher->max_batch())
                                  : s->forward_->max_batch();
  s->head_ = std::make_unique<LmHead>(*model, threads);
  s->model_ = std::move(model);
  return s;
}

Status Session::Evaluate(std::span<const int32_t> tokens, std::span<HeadRequest> heads) {
  undoable_ = 0;
  const ModelConfig& c = model_->config();
  const int vocab = c.vocab_size;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return InvalidArgument("token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                             " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  if (tokens.size() > context() - position_)
    return OutOfRange("prompt of " + std::to_string(tokens.size()) + " tokens at position " + std::to_string(position_) +
                      " exceeds the context of " + std::to_string(context()) + " tokens");
  for (const HeadRequest& h : heads) {
    if (h.index >= tokens.size())
      return InvalidArgument("head request for index " + std::to_string(h.index) + " but only " +
                             std::to_string(tokens.size()) + " tokens evaluated");
    for (int32_t id : h.candidates) {
      if (id < 0 || id >= vocab) return InvalidArgument("candidate token id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  if (batcher_) {
    batcher_->Evaluate(tokens, position_, cache_, *head_, heads);
    position_ += tokens.size();
    return Status::Ok();
  }
  const LayerObserver* observer = observer_ ? &observer_ : nullptr;
  const size_t batch = forward_->max_batch();
  for (size_t begin = 0; begin < tokens.size(); begin += batch) {
    const size_t n = std::min(batch, tokens.size() - begin);
    forward_->Run(tokens.subspan(begin, n), position_, cache_, *pool_, observer);
    position_ += n;
    // Whole-vocabulary heads of one chunk share one pass over the embedding (drafted passes);
    // a lone one, and every restricted one, is computed alone.
    size_t many = 0;
    for (HeadRequest& h : heads) {
      if (h.index < begin || h.index >= begin + n) continue;
      if (h.candidates.empty() && many < LmHead::kMaxMany) {
        many_hidden_[many] = forward_->final_hidden(h.index - begin);
        many_heads_[many++] = &h;
      } else {
        head_->Compute(forward_->final_hidden(h.index - begin), h, *pool_);
      }
    }
    if (many == 1) head_->Compute(many_hidden_[0], *many_heads_[0], *pool_);
    if (many > 1) head_->ComputeMany({many_hidden_.data(), many}, {many_heads_.data(), many}, *pool_);
  }
  return Status::Ok();
}

Status Session::EvaluateSpeculative(std::span<const int32_t> tokens, std::span<HeadRequest> heads, size_t undoable) {
  undoable_ = 0;
  if (tokens.size() > max_speculative_batch())
    return InvalidArgument("speculative batch of " + std::to_string(tokens.size()) + " tokens exceeds " +
                           std::to_string(max_speculative_batch()));
  if (undoable > tokens.size())
    return InvalidArgument("cannot undo " + std::to_string(undoable) + " of " + std::to_string(tokens.size()) + " tokens");
  if (tokens.size() <= context() - position_) cache_.SaveRing(position_ + tokens.size() - undoable, undoable);
  FGEMMA_RETURN_IF_ERROR(Evaluate(tokens, heads));
  undoable_ = undoable;
  return Status::Ok();
}

Status Session::Rewind(size_t count) {
  if (count > undoable_)
    return InvalidArgument("cannot rewind " + std::to_string(count) + " positions, the last speculative batch allows " +
                           std::to_string(undoable_));
  cache_.RestoreRing(position_ - count, position_);
  position_ -= count;
  undoable_ -= count;
  return Status::Ok();
}

Status Session::Generate(std::span<const int32_t> prompt, size_t max_new, bool stop_at_eos,
                         const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) return InvalidArgument("generation needs at least one prompt token");
  if (max_new == 0) return Evaluate(prompt);
  HeadRequest head;
  head.index = prompt.size() - 1;
  FGEMMA_RETURN_IF_ERROR(Evaluate(prompt, std::span<HeadRequest>(&head, 1)));
  const auto& eos = model_->config().eos_token_ids;
  for (size_t i = 0; i < max_new; ++i) {
    const int32_t next = head.argmax;
    if (!on_token(next)) return Status::Ok();
    if (stop_at_eos && std::find(eos.begin(), eos.end(), next) != eos.end()) return Status::Ok();
    if (i + 1 == max_new) break;
    head = HeadRequest{};
    FGEMMA_RETURN_IF_ERROR(Evaluate(std::span<const int32_t>(&next, 1), std::span<HeadRequest>(&head, 1)));
  }
  return Status::Ok();
}

Status Session::RollBackTo(size_t position, const Session& base) {
  if (base.model_ != model_ || base.lora_fingerprint() != lora_fingerprint())
    return InvalidArgument("cannot roll back to another model's or adapter's state");
  if (position < base.position_ || position > position_)
    return OutOfRange("cannot roll back to position " + std::to_string(position) + " (base " + std::to_string(base.position_) +
                      ", now " + std::to_string(position_) + ")");
  if (!cache_.RollBack(position_, position, base.cache_, base.position_))
    return OutOfRange("a sliding ring wrapped since the state was copied");
  position_ = position;
  undoable_ = 0;
  return Status::Ok();
}

Status Session::CopyStateFrom(const Session& other) {
  if (other.model_ != model_) return InvalidArgument("cannot copy session state across models");
  if (other.lora_fingerprint() != lora_fingerprint()) return InvalidArgument("cannot copy session state across LoRA adapters");
  if (other.position_ > context()) return OutOfRange("session state of " + std::to_string(other.position_) + " positions exceeds this session's context");
  cache_.CopyFrom(other.cache_, other.position_);
  position_ = other.position_;
  undoable_ = 0;
  return Status::Ok();
}

}  // namespace fgemma

namespace fgemma {

Status Session::ImportState(size_t position, const uint8_t* data, size_t size) {
  FGEMMA_RETURN_IF_ERROR(cache_.Import(position, data, size));
  position_ = position;
  undoable_ = 0;
  return Status::Ok();
}

Status Session::JumpWithZeroState(size_t position) {
  FGEMMA_RETURN_IF_ERROR(cache_.Zero(position));
  position_ = position;
  undoable_ = 0;
  return Status::Ok();
}

}  // namespace fgemma
