// The runtime engine every front end builds its callers from: one loaded model, the adapters
// running over it, the groups of callers sharing forward passes, and the process's thread pools.
//
// The CLI (call, demo, eval, bench), the C API and the server only translate their flags or params
// into an EngineConfig; Engine::NewCaller is the one place a FunctionCaller's options are filled.
// Callers made from one engine share what can be shared: the mapped weights, one adapter object per
// adapter spec, the process's pool of a thread count (SharedThreadPool), and (share_passes) one
// PassBatcher per (thread count, context, pass rows, adapter).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/lora_adapter.h"
#include "runtime/function_caller.h"
#include "runtime/loaded_model.h"
#include "runtime/pass_batcher.h"
#include "runtime/token_budget.h"

namespace fgemma {

inline constexpr size_t kDefaultContext = 4096;
// Rows of a shared pass: a catalog prefill joins in chunks of this many (the others wait one chunk).
inline constexpr size_t kSharedPassRows = 256;

struct EngineConfig {
  int threads = 0;                  // 0: ThreadPool::DefaultThreads()
  size_t context = kDefaultContext; // positions per session
  // Catalog cache: one file (cache_path) or a directory of one file a catalog (cache_dir), not
  // both; "" = memory only. One writer per file: a front end handing out several callers gives
  // the file to one of them (FunctionCallerOptions::cache_path / cache_dir).
  std::string cache_path, cache_dir;
  // The generator's switches and tuning (restricted head, jump-forward, drafts); its max_tokens is
  // not read: the callers' cap is ResolveMaxTokens(max_tokens, context).
  ConstrainedOptions decoding;
  size_t max_tokens = 0;            // the default budget a call's own limit replaces; 0: kDefaultMaxTokens
  bool trust_content_tokens = false;  // FunctionCallerOptions::trust_content_tokens
  bool reuse_prompt = true;           // FunctionCallerOptions::reuse_prompt
  LoraSpec lora;                      // the adapter the callers run with (dir "": the base alone)
  // Callers decoding at the same time share forward passes (runtime/pass_batcher.h), in passes of
  // up to pass_rows rows. Answers are unchanged.
  bool share_passes = false;
  size_t pass_rows = kSharedPassRows;
};

// The adapter of a "DIR[:SCALE]" option (--lora; ParseLoraSpec), "" being the base alone (dir "").
Result<LoraSpec> AdapterSpecOf(const std::string& text);

class Engine {
 public:
  // Over a model loaded elsewhere; `config` is what NewCaller() builds callers from.
  static std::unique_ptr<Engine> Create(LoadedModel loaded, EngineConfig config = {});
  static Result<std::unique_ptr<Engine>> Load(const std::string& path, const LoadOptions& options,
                                              EngineConfig config = {});

  // A caller from the engine's config, or from `config` (a C API caller's own params).
  Result<std::unique_ptr<FunctionCaller>> NewCaller() { return NewCaller(config_); }
  Result<std::unique_ptr<FunctionCaller>> NewCaller(const EngineConfig& config);
  // The options NewCaller gives FunctionCaller::Create (adapter loaded, pass group joined).
  Result<FunctionCallerOptions> CallerOptions(const EngineConfig& config);

  // The adapter of `spec` (null for dir ""), loaded once and shared while anything holds it.
  Result<std::shared_ptr<const LoraAdapter>> Adapter(const LoraSpec& spec);
  // The live pass group callers made from `config` (with share_passes) join, or null.
  std::shared_ptr<PassBatcher> PassGroup(const EngineConfig& config);
  // The pass groups some caller still holds (stats, tests).
  std::vector<std::shared_ptr<PassBatcher>> LivePassGroups();

  const LoadedModel& loaded() const { return loaded_; }
  const EngineConfig& config() const { return config_; }

 private:
  Engine(LoadedModel loaded, EngineConfig config) : loaded_(std::move(loaded)), config_(std::move(config)) {}
  // With mu_ held: the live adapter of `spec`, and the live group of config's threads, context and
  // rows over `lora` (null when there is none).
  std::shared_ptr<const LoraAdapter> FindAdapterLocked(const LoraSpec& spec) const;
  std::shared_ptr<PassBatcher> FindGroupLocked(const EngineConfig& config, const LoraAdapter* lora) const;
  // The group of (threads, context, rows, adapter), made if none is alive.
  Result<std::shared_ptr<PassBatcher>> JoinPassGroup(const EngineConfig& config,
                                                     const std::shared_ptr<const LoraAdapter>& lora);

  struct AdapterEntry {
    LoraSpec spec;
    std::weak_ptr<const LoraAdapter> adapter;
  };
  // Weak: a group lives as long as its callers (each holds the batcher, which holds the adapter).
  struct GroupEntry {
    int threads = 0;
    size_t context = 0, rows = 0;
    const LoraAdapter* lora = nullptr;  // alive while the batcher is
    std::weak_ptr<PassBatcher> batcher;
  };

  LoadedModel loaded_;
  EngineConfig config_;
  std::mutex mu_;  // callers are made from any thread (the C API)
  std::vector<AdapterEntry> adapters_;
  std::vector<GroupEntry> groups_;
};

}  // namespace fgemma
