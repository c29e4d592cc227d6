#include "runtime/model_files.h"

#include "chat/template_id.h"
#include "io/gguf.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

bool IsGguf(const std::string& p) { return p.size() >= 5 && p.compare(p.size() - 5, 5, ".gguf") == 0; }

std::string DirOf(const std::string& path) {
  if (IsDirectory(path)) return path;
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Result<Tokenizer> TokenizerFromGguf(const std::string& path) {
  FGEMMA_TRY(GgufFile file, GgufFile::Open(path));
  FGEMMA_TRY(GgufTokenizer t, file.ReadTokenizer());
  if (t.model != "llama")
    return Unsupported(path + ": tokenizer.ggml.model '" + t.model + "' is not supported (Gemma's SentencePiece-style 'llama')");
  VocabSpec spec;
  spec.tokens = std::move(t.tokens);
  spec.scores = std::move(t.scores);
  spec.types = std::move(t.token_types);
  spec.bos_id = t.bos_id;
  // Generation ends at <eos> and, for chat models, at <end_of_turn>.
  if (t.eos_id >= 0) spec.eos_ids.push_back(t.eos_id);
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i] == "<end_of_turn>" && static_cast<int32_t>(i) != t.eos_id) spec.eos_ids.push_back(static_cast<int32_t>(i));
  }
  spec.add_space_prefix = t.add_space_prefix.value_or(false);
  auto tok = Tokenizer::FromVocab(spec);
  if (!tok.ok()) return tok.status().WithContext(path);
  return tok;
}

}  // namespace

Result<Tokenizer> LoadTokenizerFor(const std::string& model_path, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty()) return Tokenizer::FromFile(tokenizer_path);
  if (!FileExists(model_path)) return NotFound(model_path + ": no such file or directory");
  if (IsGguf(model_path)) return TokenizerFromGguf(model_path);
  // A directory or a tokenizer.json itself: the tokenizer's own loader names what is missing.
  if (IsDirectory(model_path) || (model_path.size() >= 5 && model_path.compare(model_path.size() - 5, 5, ".json") == 0))
    return Tokenizer::FromFile(model_path);
  const std::string dir = DirOf(model_path);
  if (!FileExists(dir + "/tokenizer.json"))
    return NotFound(dir + ": no tokenizer.json beside the model (pass --tokenizer PATH)");
  return Tokenizer::FromFile(dir);
}

Result<ModelTemplate> LoadTemplateFor(const std::string& model_path) {
  std::string text, source;
  if (IsGguf(model_path)) {
    FGEMMA_TRY(GgufFile file, GgufFile::Open(model_path));
    if (file.Has("tokenizer.chat_template")) {
      FGEMMA_TRY(text, file.GetString("tokenizer.chat_template"));
      source = model_path + " (tokenizer.chat_template)";
    }
  } else {
    const std::string cfg = DirOf(model_path) + "/tokenizer_config.json";
    if (FileExists(cfg)) {
      FGEMMA_TRY(Json j, ReadJsonFile(cfg));
      auto it = j.find("chat_template");
      if (it != j.end() && it->is_string()) {
        text = it->get<std::string>();
        source = cfg;
      }
    }
  }
  ModelTemplate t;
  if (text.empty()) {
    t.source = "default (the model ships no chat template; using FunctionGemma's official one)";
    return t;
  }
  auto kind = IdentifyChatTemplate(text);
  if (!kind.ok()) return kind.status().WithContext(source);
  t.kind = kind.value();
  t.source = source;
  return t;
}

}  // namespace fgemma
