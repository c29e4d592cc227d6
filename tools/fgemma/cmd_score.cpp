// fgemma score: logits at chosen positions of an id sequence, for comparing engines.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "command.h"
#include "util/json.h"
#include "number_options.h"
#include "lora_option.h"
#include "runtime/session.h"
#include "util/file_replace.h"
#include "util/ids.h"

namespace fgemma::cli {
namespace {

struct ScoreArgs {
  std::string model, lora, ids, positions = "last", logits_out;
  size_t top = 10;
  int threads = 0;
};

// "last", "all", or a comma list of indices ("0,15,-1"; negative counts from the end).
Result<std::vector<size_t>> ParsePositions(const std::string& spec, size_t n) {
  std::vector<size_t> out;
  if (spec == "last") return std::vector<size_t>{n - 1};
  if (spec == "all") {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    long long v;
    try {
      size_t used = 0;
      v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (...) {
      return InvalidArgument("--positions: '" + item + "' is not an integer");
    }
    if (v < 0) v += static_cast<long long>(n);
    if (v < 0 || v >= static_cast<long long>(n))
      return InvalidArgument("--positions: " + item + " is outside the " + std::to_string(n) + " ids");
    out.push_back(static_cast<size_t>(v));
  }
  return out;
}

int RunScore(const ScoreArgs& a) {
  auto ids = ReadIdsFile(a.ids);
  if (!ids.ok()) return Fail(ids.status().ToString());
  if (ids->empty()) return Fail(a.ids + ": no token ids");
  auto positions = ParsePositions(a.positions, ids->size());
  if (!positions.ok()) return Fail(positions.status().ToString());
  auto model = Model::Load(a.model);
  if (!model.ok()) return Fail(model.status().ToString());
  std::shared_ptr<const Model> m(std::move(model).value());
  SessionOptions so;
  so.threads = a.threads;
  auto lora = LoraAdapter::LoadFor(a.lora, *m);
  if (!lora.ok()) return Fail(lora.status().ToString());
  so.lora = std::move(lora).value();
  so.context = std::max<size_t>(ids->size(), 64);
  if (so.context > static_cast<size_t>(m->config().max_position_embeddings))
    return Fail(a.ids + ": " + std::to_string(ids->size()) + " ids exceed the model's context of " +
                std::to_string(m->config().max_position_embeddings));
  auto session = Session::Create(m, so);
  if (!session.ok()) return Fail(session.status().ToString());

  // Written beside and renamed into place (util/file_replace.h), like every file fgemma replaces.
  std::optional<FileReplacement> logits_out;
  std::FILE* logits_file = nullptr;
  if (!a.logits_out.empty()) {
    auto begun = FileReplacement::Begin(a.logits_out);
    if (!begun.ok()) return Fail(begun.status().ToString());
    logits_out.emplace(std::move(begun).value());
    logits_file = logits_out->stream();
    if (!logits_file) return Fail(a.logits_out + ": cannot open for writing");
  }
  // One position at a time: only one vocabulary-sized row ever exists.
  const size_t vocab = static_cast<size_t>(m->config().vocab_size);
  std::vector<float> logits(vocab);
  std::vector<size_t> order(vocab);
  std::vector<size_t> sorted = positions.value();
  std::sort(sorted.begin(), sorted.end());
  size_t done = 0;  // ids evaluated so far
  Session& s = *session.value();
  for (size_t pos : positions.value()) {
    if (pos + 1 <= done) {  // earlier position requested after a later one: start over
      s.Reset();
      done = 0;
    }
    HeadRequest head;
    head.index = pos - done;
    head.logits = logits.data();
    Status st = s.Evaluate(std::span<const int32_t>(ids->data() + done, pos + 1 - done), std::span<HeadRequest>(&head, 1));
    if (!st.ok()) return Fail(st.ToString());
    done = pos + 1;
    const size_t k = std::min(a.top, vocab);
    for (size_t v = 0; v < vocab; ++v) order[v] = v;
    std::partial_sort(order.begin(), order.begin() + static_cast<long>(k), order.end(), [&](size_t x, size_t y) {
      return logits[x] > logits[y] || (logits[x] == logits[y] && x < y);
    });
    Json top = Json::array();
    for (size_t i = 0; i < k; ++i) top.push_back({order[i], logits[order[i]]});  // the float, shortest exact digits
    std::printf("%s\n", Json{{"pos", pos}, {"top", std::move(top)}}.dump().c_str());
    if (logits_file && std::fwrite(logits.data(), sizeof(float), vocab, logits_file) != vocab) return Fail(a.logits_out + ": write failed");
  }
  if (logits_out) {
    Status st = logits_out->Commit();
    if (!st.ok()) return Fail(st.ToString());
  }
  return 0;
}

const CommandRegistration kScore(20, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<ScoreArgs>();
  auto* cmd = app.add_subcommand("score", "Print top logits at chosen positions of an id sequence (one JSON object per line)");
  cmd->add_option("--model", a->model, "model directory, .safetensors or .gguf")->required();
  AddLoraOption(cmd, &a->lora);
  cmd->add_option("--ids", a->ids, "file of token ids (whitespace-separated or JSON array)")->required();
  cmd->add_option("--positions", a->positions, "'last' (default), 'all', or a comma list (negative counts from the end)");
  cmd->add_option("--top", a->top, "how many top logits to print (default 10)");
  cmd->add_option("--logits-out", a->logits_out, "write each position's full logit row as little-endian float32");
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  return [a] { return RunScore(*a); };
});

}  // namespace
}  // namespace fgemma::cli
