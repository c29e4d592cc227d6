#include "convert/convert_metadata.h"

#include <cmath>

#include "io/gguf_keys.h"
#include "convert/convert.h"
#include "tokenizer/gguf_vocab.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

// Collects the first failure of a run of writer calls (the writer's errors are sticky anyway).
struct FirstError {
  Status status;
  void operator()(Status s) {
    if (status.ok()) status = std::move(s);
  }
};

struct TokenizerConfig {
  bool add_bos = true;   // Gemma prompts start with <bos>
  bool add_eos = false;
  std::string chat_template;                                   // tokenizer.chat_template
  std::vector<std::pair<std::string, std::string>> named;      // tokenizer.chat_template.<name>
};

Status ReadBoolField(const Json& j, const char* key, const std::string& path, bool* out) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  if (!j[key].is_boolean()) return InvalidArgument(path + ": field '" + key + "' must be true or false");
  *out = j[key].get<bool>();
  return Status::Ok();
}

// tokenizer_config.json's chat_template: a string, or a list of {name, template} whose "default"
// entry is the main template (the others are stored under their names, as llama.cpp's converter does).
Status ReadTemplates(const Json& t, const std::string& path, TokenizerConfig& tc) {
  if (t.is_null()) return Status::Ok();
  if (t.is_string()) {
    tc.chat_template = t.get<std::string>();
    return Status::Ok();
  }
  if (!t.is_array()) return InvalidArgument(path + ": field 'chat_template' must be a string or a list");
  for (const Json& e : t) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
        !e["template"].is_string())
      return InvalidArgument(path + ": chat_template list entries must be {\"name\": ..., \"template\": ...}");
    const std::string name = e["name"].get<std::string>();
    if (name == "default") {
      tc.chat_template = e["template"].get<std::string>();
    } else {
      tc.named.emplace_back(name, e["template"].get<std::string>());
    }
  }
  return Status::Ok();
}

Result<TokenizerConfig> ReadTokenizerConfig(const std::string& dir) {
  TokenizerConfig tc;
  const std::string path = dir + "/tokenizer_config.json";
  if (FileExists(path)) {
    FGEMMA_TRY(Json j, ReadJsonFile(path));
    if (!j.is_object()) return InvalidArgument(path + ": expected a JSON object");
    FGEMMA_RETURN_IF_ERROR(ReadBoolField(j, "add_bos_token", path, &tc.add_bos));
    FGEMMA_RETURN_IF_ERROR(ReadBoolField(j, "add_eos_token", path, &tc.add_eos));
    if (j.contains("chat_template")) FGEMMA_RETURN_IF_ERROR(ReadTemplates(j["chat_template"], path, tc));
  }
  const std::string jinja = dir + "/chat_template.jinja";
  if (FileExists(jinja)) {
    FGEMMA_TRY(tc.chat_template, ReadFileToString(jinja));
  }
  return tc;
}

// The loader takes the table's defaults for the optional gemma3.* keys (every 6th layer global,
// local RoPE base 10000, query scale head_dim, no softcaps, no RoPE scaling); only differences are
// written.
Status AddConfigExtras(const ModelConfig& c, GgufWriter& w, FirstError& add) {
  namespace k = gguf_key;
  if (c.rope_scaling_factor != k::kRopeScalingFactor.default_f32()) {
    add(AddGgufKey(w, k::kRopeScalingType, "linear"));
    add(AddGgufKey(w, k::kRopeScalingFactor, c.rope_scaling_factor));
  }
  if (c.rope_theta_local != k::kRopeFreqBaseSwa.default_f32()) add(AddGgufKey(w, k::kRopeFreqBaseSwa, c.rope_theta_local));
  const int default_pattern = static_cast<int>(k::kSlidingWindowPattern.default_u32());
  if (c.layer_kinds != SlidingPattern(c.num_layers, default_pattern)) {
    int pattern = 0;
    for (int p = 1; p <= c.num_layers + 1 && pattern == 0; ++p) {
      if (c.layer_kinds == SlidingPattern(c.num_layers, p)) pattern = p;
    }
    if (pattern == 0) return Unsupported("the config's layer_types follow no every-Nth-layer-global pattern, which GGUF cannot express");
    add(AddGgufKey(w, k::kSlidingWindowPattern, static_cast<uint32_t>(pattern)));
  }
  if (c.query_pre_attn_scalar != static_cast<float>(c.head_dim))  // its default: key_length
    add(AddGgufKey(w, k::kQueryPreAttnScalar, c.query_pre_attn_scalar));
  if (c.final_logit_softcap != k::kFinalLogitSoftcap.default_f32())
    add(AddGgufKey(w, k::kFinalLogitSoftcap, c.final_logit_softcap));
  if (c.attn_logit_softcap != k::kAttnLogitSoftcap.default_f32())
    add(AddGgufKey(w, k::kAttnLogitSoftcap, c.attn_logit_softcap));
  return Status::Ok();
}

Status CheckId(const char* what, int64_t id, int32_t vocab_size) {
  if (id < 0 || id >= vocab_size)
    return InvalidArgument(std::string(what) + " id " + std::to_string(id) + " is outside the vocabulary (" +
                           std::to_string(vocab_size) + " tokens)");
  return Status::Ok();
}

}  // namespace

Status AddHfMetadata(const ModelConfig& c, const std::string& model_dir, const std::string& name, uint32_t file_type,
                     GgufWriter& w) {
  GgufVocab vocab;
  {
    // The tokenizer (merge tables included) lives only until its arrays are copied out.
    auto tok = Tokenizer::FromFile(model_dir);
    if (!tok.ok()) return tok.status().WithContext("reading the tokenizer for the GGUF vocabulary");
    FGEMMA_TRY(vocab, ExportGgufVocab(tok.value(), c.vocab_size));
  }
  FGEMMA_TRY(TokenizerConfig tc, ReadTokenizerConfig(model_dir));
  if (c.eos_token_ids.empty()) return InvalidArgument(model_dir + "/config.json: no eos_token_id");
  FGEMMA_RETURN_IF_ERROR(CheckId("bos_token_id", c.bos_token_id, c.vocab_size).WithContext(model_dir + "/config.json"));
  FGEMMA_RETURN_IF_ERROR(CheckId("eos_token_id", c.eos_token_ids[0], c.vocab_size).WithContext(model_dir + "/config.json"));
  FGEMMA_RETURN_IF_ERROR(CheckId("pad_token_id", c.pad_token_id, c.vocab_size).WithContext(model_dir + "/config.json"));

  namespace k = gguf_key;
  FirstError add;
  add(AddGgufKey(w, k::kArchitecture, "gemma3"));
  add(AddGgufKey(w, k::kName, name));
  const auto u32 = [](int v) { return static_cast<uint32_t>(v); };
  add(AddGgufKey(w, k::kContextLength, u32(c.max_position_embeddings)));
  add(AddGgufKey(w, k::kEmbeddingLength, u32(c.hidden)));
  add(AddGgufKey(w, k::kBlockCount, u32(c.num_layers)));
  add(AddGgufKey(w, k::kFeedForwardLength, u32(c.intermediate)));
  add(AddGgufKey(w, k::kHeadCount, u32(c.num_heads)));
  add(AddGgufKey(w, k::kHeadCountKv, u32(c.num_kv_heads)));
  add(AddGgufKey(w, k::kKeyLength, u32(c.head_dim)));
  add(AddGgufKey(w, k::kValueLength, u32(c.head_dim)));
  add(AddGgufKey(w, k::kRmsEpsilon, c.rms_norm_eps));
  add(AddGgufKey(w, k::kRopeFreqBase, c.rope_theta_global));
  add(AddGgufKey(w, k::kSlidingWindow, u32(c.sliding_window)));
  FGEMMA_RETURN_IF_ERROR(AddConfigExtras(c, w, add).WithContext(model_dir + "/config.json"));

  add(AddGgufKey(w, k::kTokenizerModel, "llama"));
  add(AddGgufKey(w, k::kTokenizerPre, "default"));
  add(AddGgufKey(w, k::kTokens, vocab.spec.tokens));
  add(AddGgufKey(w, k::kScores, vocab.spec.scores));
  add(AddGgufKey(w, k::kTokenType, vocab.spec.types));
  add(AddGgufKey(w, k::kBosTokenId, u32(c.bos_token_id)));
  add(AddGgufKey(w, k::kEosTokenId, u32(c.eos_token_ids[0])));
  if (vocab.unk_id >= 0) add(AddGgufKey(w, k::kUnknownTokenId, u32(vocab.unk_id)));
  add(AddGgufKey(w, k::kPaddingTokenId, u32(c.pad_token_id)));
  add(AddGgufKey(w, k::kAddBosToken, tc.add_bos));
  add(AddGgufKey(w, k::kAddEosToken, tc.add_eos));
  add(AddGgufKey(w, k::kAddSpacePrefix, vocab.spec.add_space_prefix));
  if (!tc.chat_template.empty()) add(AddGgufKey(w, k::kChatTemplate, tc.chat_template));
  if (!tc.named.empty()) {
    std::vector<std::string> names;
    for (const auto& [n, text] : tc.named) {
      add(w.AddString(std::string(k::kChatTemplate.name) + "." + n, text));
      names.push_back(n);
    }
    add(AddGgufKey(w, k::kChatTemplates, names));
  }
  add(AddGgufKey(w, k::kFileType, file_type));
  return add.status;
}

Status CopyGgufMetadata(const GgufFile& source, const std::string& name, uint32_t file_type, GgufWriter& w) {
  namespace k = gguf_key;
  FirstError add;
  bool has_name = false, has_file_type = false;
  for (const GgufKeyValue& kv : source.metadata()) {
    if (kv.key == k::kName.name && !name.empty()) {
      add(AddGgufKey(w, k::kName, name));
      has_name = true;
    } else if (kv.key == k::kFileType.name) {
      add(AddGgufKey(w, k::kFileType, file_type));
      has_file_type = true;
    } else {
      add(w.AddValue(kv.key, kv.value));
    }
  }
  if (!has_name && !name.empty()) add(AddGgufKey(w, k::kName, name));
  if (!has_file_type) add(AddGgufKey(w, k::kFileType, file_type));
  return add.status;
}

}  // namespace fgemma
