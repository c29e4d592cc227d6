// fgemma generate: greedy continuation of an id sequence.
#include <cstdio>

#include "command.h"
#include "number_options.h"
#include "lora_option.h"
#include "runtime/session.h"
#include "util/ids.h"
#include "util/process_stats.h"

namespace fgemma::cli {
namespace {

struct GenerateArgs {
  std::string model, lora, ids;
  size_t max_new = 32;
  size_t context = 0;
  int threads = 0;
  bool stop_at_eos = false;
  bool stats = false;
};

int RunGenerate(const GenerateArgs& a) {
  auto ids = ReadIdsFile(a.ids);
  if (!ids.ok()) return Fail(ids.status().ToString());
  auto model = Model::Load(a.model);
  if (!model.ok()) return Fail(model.status().ToString());
  std::shared_ptr<const Model> m(std::move(model).value());
  SessionOptions so;
  so.threads = a.threads;
  auto lora = LoadLoraOption(a.lora, *m);
  if (!lora.ok()) return Fail(lora.status().ToString());
  so.lora = std::move(lora).value();
  so.context = a.context ? a.context
                         : std::min<size_t>(static_cast<size_t>(m->config().max_position_embeddings), ids->size() + a.max_new);
  auto session = Session::Create(m, so);
  if (!session.ok()) return Fail(session.status().ToString());
  std::vector<int32_t> out;
  out.reserve(a.max_new);
  const double start = NowSeconds();
  Status st = session.value()->Generate(*ids, a.max_new, a.stop_at_eos, [&](int32_t t) {
    out.push_back(t);
    return true;
  });
  if (!st.ok()) return Fail(st.ToString());
  if (a.stats) {
    const double s = NowSeconds() - start;
    std::fprintf(stderr, "generated %zu tokens after a %zu-token prompt in %.2f s (%.1f tok/s overall); peak RSS %.1f MiB\n",
                 out.size(), ids->size(), s, static_cast<double>(out.size()) / s,
                 static_cast<double>(PeakRssBytes()) / (1024.0 * 1024.0));
  }
  std::printf("[");
  for (size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? "," : "", out[i]);
  std::printf("]\n");
  return 0;
}

const CommandRegistration kGenerate(30, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Greedy continuation of token ids; prints the new ids as a JSON array");
  cmd->add_option("--model", a->model, "model directory, .safetensors or .gguf")->required();
  AddLoraOption(cmd, &a->lora);
  cmd->add_option("--ids", a->ids, "file of prompt token ids (whitespace-separated or JSON array)")->required();
  cmd->add_option("--max-new", a->max_new, "tokens to generate (default 32)");
  cmd->add_option("--context", a->context, "context length (default: prompt + max-new)");
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  cmd->add_flag("--stop-at-eos", a->stop_at_eos, "stop after an end-of-sequence / end-of-turn token");
  cmd->add_flag("--stats", a->stats, "print time, tokens/s and peak RSS to stderr");
  return [a] { return RunGenerate(*a); };
});

}  // namespace
}  // namespace fgemma::cli
