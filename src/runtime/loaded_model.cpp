#include "runtime/loaded_model.h"

#include "chat/template_id.h"
#include "io/gguf_keys.h"
#include "model/model_gguf.h"
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

Result<Tokenizer> TokenizerFromGguf(const GgufFile& file) {
  const std::string& path = file.name();
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

// A tokenizer from files (not a GGUF): the override, a directory or a tokenizer.json itself, or the
// tokenizer.json beside a .safetensors file.
Result<Tokenizer> TokenizerFromFiles(const std::string& model_path, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty()) return Tokenizer::FromFile(tokenizer_path);
  // The tokenizer's own loader names what is missing.
  if (IsDirectory(model_path) || (model_path.size() >= 5 && model_path.compare(model_path.size() - 5, 5, ".json") == 0))
    return Tokenizer::FromFile(model_path);
  const std::string dir = DirOf(model_path);
  if (!FileExists(dir + "/tokenizer.json"))
    return NotFound(dir + ": no tokenizer.json beside the model (pass --tokenizer PATH)");
  return Tokenizer::FromFile(dir);
}

Result<ModelTemplate> IdentifyTemplate(const std::string& text, const std::string& source) {
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

Result<ModelTemplate> TemplateFromGguf(const GgufFile& file) {
  const std::string_view key = gguf_key::kChatTemplate.name;
  if (!file.Has(key)) return IdentifyTemplate("", "");
  FGEMMA_TRY(std::string text, file.GetString(key));
  return IdentifyTemplate(text, file.name() + " (" + std::string(key) + ")");
}

// tokenizer_config.json's chat_template, beside the model.
Result<ModelTemplate> TemplateFromFiles(const std::string& model_path) {
  const std::string cfg = DirOf(model_path) + "/tokenizer_config.json";
  if (!FileExists(cfg)) return IdentifyTemplate("", "");
  FGEMMA_TRY(Json j, ReadJsonFile(cfg));
  auto it = j.find("chat_template");
  if (it == j.end() || !it->is_string()) return IdentifyTemplate("", "");
  return IdentifyTemplate(it->get<std::string>(), cfg);
}

// A .gguf: one GgufFile serves the template, the weights and the vocabulary.
Result<LoadedModel> LoadGguf(const std::string& path, const LoadOptions& options) {
  FGEMMA_TRY(GgufFile opened, GgufFile::Open(path));
  auto file = std::make_shared<const GgufFile>(std::move(opened));
  FGEMMA_TRY(ModelTemplate tmpl, TemplateFromGguf(*file));
  auto model = Model::FromGguf(file);
  if (!model.ok()) return model.status();
  FGEMMA_TRY(Tokenizer tokenizer,
             options.tokenizer_path.empty() ? TokenizerFromGguf(*file) : Tokenizer::FromFile(options.tokenizer_path));
  return LoadedModel::FromParts(std::move(model).value(), std::move(tokenizer), std::move(tmpl), path);
}

}  // namespace

Result<LoadedModel> LoadedModel::FromParts(std::shared_ptr<const Model> model, Tokenizer tokenizer,
                                           ModelTemplate chat_template, const std::string& what) {
  if (tokenizer.vocab_size() != model->config().vocab_size)
    return InvalidArgument(what + ": tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                           " tokens but the model's vocabulary is " + std::to_string(model->config().vocab_size));
  return LoadedModel{std::move(model), std::move(tokenizer), std::move(chat_template)};
}

Result<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options) {
  if (!FileExists(path))
    return NotFound(path + ": no such file or directory").WithContext("loading " + path);  // as Model::Load says it
  if (IsGguf(path)) return LoadGguf(path, options);
  FGEMMA_TRY(ModelTemplate tmpl, TemplateFromFiles(path));
  FGEMMA_TRY(std::unique_ptr<Model> model, Model::Load(path));
  FGEMMA_TRY(Tokenizer tokenizer, TokenizerFromFiles(path, options.tokenizer_path));
  return LoadedModel::FromParts(std::move(model), std::move(tokenizer), std::move(tmpl), path);
}

Result<Tokenizer> LoadTokenizerFor(const std::string& model_path, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty()) return Tokenizer::FromFile(tokenizer_path);
  if (!FileExists(model_path)) return NotFound(model_path + ": no such file or directory");
  if (!IsGguf(model_path)) return TokenizerFromFiles(model_path, "");
  FGEMMA_TRY(GgufFile file, GgufFile::Open(model_path));
  return TokenizerFromGguf(file);
}

Result<ModelTemplate> LoadTemplateFor(const std::string& model_path) {
  if (!IsGguf(model_path)) return TemplateFromFiles(model_path);
  FGEMMA_TRY(GgufFile file, GgufFile::Open(model_path));
  return TemplateFromGguf(file);
}

}  // namespace fgemma
