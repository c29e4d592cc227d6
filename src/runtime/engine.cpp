#include "runtime/engine.h"

#include <algorithm>

#include "util/run_limits.h"
#include "util/thread_pool.h"

namespace fgemma {
namespace {

int ResolvedThreads(int threads) { return threads > 0 ? threads : ThreadPool::DefaultThreads(); }

bool SameSpec(const LoraSpec& a, const LoraSpec& b) { return a.dir == b.dir && a.scale == b.scale; }

}  // namespace

Result<LoraSpec> AdapterSpecOf(const std::string& text) {
  if (text.empty()) return LoraSpec{"", 1.0f};
  return ParseLoraSpec(text);
}

std::unique_ptr<Engine> Engine::Create(LoadedModel loaded, EngineConfig config) {
  return std::unique_ptr<Engine>(new Engine(std::move(loaded), std::move(config)));
}

Result<std::unique_ptr<Engine>> Engine::Load(const std::string& path, const LoadOptions& options, EngineConfig config) {
  FGEMMA_TRY(LoadedModel loaded, LoadModel(path, options));
  return Create(std::move(loaded), std::move(config));
}

Result<std::shared_ptr<const LoraAdapter>> Engine::Adapter(const LoraSpec& spec) {
  if (spec.dir.empty()) return std::shared_ptr<const LoraAdapter>();
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(adapters_, [](const AdapterEntry& e) { return e.adapter.expired(); });
  if (auto adapter = FindAdapterLocked(spec)) return adapter;
  FGEMMA_TRY(std::shared_ptr<const LoraAdapter> adapter, LoraAdapter::LoadFor(spec, *loaded_.model));
  adapters_.push_back({spec, adapter});
  return adapter;
}

Result<std::shared_ptr<PassBatcher>> Engine::JoinPassGroup(const EngineConfig& config,
                                                           const std::shared_ptr<const LoraAdapter>& lora) {
  const int threads = ResolvedThreads(config.threads);
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(groups_, [](const GroupEntry& g) { return g.batcher.expired(); });
  if (auto batcher = FindGroupLocked(config, lora.get())) return batcher;
  FGEMMA_TRY(std::shared_ptr<PassBatcher> batcher,
             PassBatcher::Create(loaded_.model, config.pass_rows, config.context, SharedThreadPool(threads), lora));
  groups_.push_back({threads, config.context, config.pass_rows, lora.get(), batcher});
  return batcher;
}

std::shared_ptr<const LoraAdapter> Engine::FindAdapterLocked(const LoraSpec& spec) const {
  for (const AdapterEntry& e : adapters_)
    if (SameSpec(e.spec, spec))
      if (auto adapter = e.adapter.lock()) return adapter;
  return nullptr;
}

std::shared_ptr<PassBatcher> Engine::FindGroupLocked(const EngineConfig& config, const LoraAdapter* lora) const {
  const int threads = ResolvedThreads(config.threads);
  for (const GroupEntry& g : groups_)
    if (g.threads == threads && g.context == config.context && g.rows == config.pass_rows && g.lora == lora)
      if (auto batcher = g.batcher.lock()) return batcher;
  return nullptr;
}

std::shared_ptr<PassBatcher> Engine::PassGroup(const EngineConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<const LoraAdapter> lora = FindAdapterLocked(config.lora);
  if (!config.lora.dir.empty() && lora == nullptr) return nullptr;
  return FindGroupLocked(config, lora.get());
}

std::vector<std::shared_ptr<PassBatcher>> Engine::LivePassGroups() {
  std::vector<std::shared_ptr<PassBatcher>> live;
  std::lock_guard<std::mutex> lock(mu_);
  for (const GroupEntry& g : groups_)
    if (auto batcher = g.batcher.lock()) live.push_back(std::move(batcher));
  return live;
}

Result<FunctionCallerOptions> Engine::CallerOptions(const EngineConfig& config) {
  FGEMMA_RETURN_IF_ERROR(CheckThreadCount(config.threads, "threads"));
  FunctionCallerOptions fo;
  fo.threads = config.threads;
  fo.context = config.context;
  fo.cache_path = config.cache_path;
  fo.cache_dir = config.cache_dir;
  fo.decoding = config.decoding;
  fo.decoding.max_tokens = ResolveMaxTokens(config.max_tokens, config.context);
  fo.trust_content_tokens = config.trust_content_tokens;
  fo.reuse_prompt = config.reuse_prompt;
  FGEMMA_TRY(fo.lora, Adapter(config.lora));
  // Every caller of one thread count computes on the process's pool of that count.
  fo.pool = SharedThreadPool(config.threads);
  if (config.share_passes) {
    FGEMMA_TRY(fo.batcher, JoinPassGroup(config, fo.lora));
  }
  return fo;
}

Result<std::unique_ptr<FunctionCaller>> Engine::NewCaller(const EngineConfig& config) {
  FGEMMA_TRY(FunctionCallerOptions fo, CallerOptions(config));
  return FunctionCaller::Create(loaded_, fo);
}

}  // namespace fgemma
