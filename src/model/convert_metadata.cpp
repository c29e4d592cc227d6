#include "model/convert_metadata.h"

#include <cmath>

#include "model/convert.h"
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

// The loader assumes every 6th layer global, local RoPE base 10000, query scale head_dim, no
// softcaps and no RoPE scaling unless told otherwise; only differences are written.
Status AddConfigExtras(const ModelConfig& c, GgufWriter& w, FirstError& add) {
  if (c.rope_scaling_factor != 1.0f) {
    add(w.AddString("gemma3.rope.scaling.type", "linear"));
    add(w.AddF32("gemma3.rope.scaling.factor", c.rope_scaling_factor));
  }
  if (c.rope_theta_local != 1e4f) add(w.AddF32("gemma3.rope.freq_base_swa", c.rope_theta_local));
  if (c.layer_kinds != SlidingPattern(c.num_layers, 6)) {
    int pattern = 0;
    for (int p = 1; p <= c.num_layers + 1 && pattern == 0; ++p) {
      if (c.layer_kinds == SlidingPattern(c.num_layers, p)) pattern = p;
    }
    if (pattern == 0) return Unsupported("the config's layer_types follow no every-Nth-layer-global pattern, which GGUF cannot express");
    add(w.AddU32("gemma3.attention.sliding_window_pattern", static_cast<uint32_t>(pattern)));
  }
  if (c.query_pre_attn_scalar != static_cast<float>(c.head_dim))
    add(w.AddF32("gemma3.attention.query_pre_attn_scalar", c.query_pre_attn_scalar));
  if (c.final_logit_softcap != 0) add(w.AddF32("gemma3.final_logit_softcapping", c.final_logit_softcap));
  if (c.attn_logit_softcap != 0) add(w.AddF32("gemma3.attn_logit_softcapping", c.attn_logit_softcap));
  return Status::Ok();
}

Status CheckId(const char* what, int64_t id, int32_t vocab_size) {
  if (id < 0 || id >= vocab_size)
    return InvalidArgument(std::string(what) + " id " + std::to_string(id) + " is outside the vocabulary (" +
                           std::to_string(vocab_size) + " tokens)");
  return Status::Ok();
}

}  // namespace

Status AddHfMetadata(const ModelConfig& c, const std::string& model_dir, const std::string& name, DType type,
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

  FirstError add;
  add(w.AddString("general.architecture", "gemma3"));
  add(w.AddString("general.name", name));
  const auto u32 = [](int v) { return static_cast<uint32_t>(v); };
  add(w.AddU32("gemma3.context_length", u32(c.max_position_embeddings)));
  add(w.AddU32("gemma3.embedding_length", u32(c.hidden)));
  add(w.AddU32("gemma3.block_count", u32(c.num_layers)));
  add(w.AddU32("gemma3.feed_forward_length", u32(c.intermediate)));
  add(w.AddU32("gemma3.attention.head_count", u32(c.num_heads)));
  add(w.AddU32("gemma3.attention.head_count_kv", u32(c.num_kv_heads)));
  add(w.AddU32("gemma3.attention.key_length", u32(c.head_dim)));
  add(w.AddU32("gemma3.attention.value_length", u32(c.head_dim)));
  add(w.AddF32("gemma3.attention.layer_norm_rms_epsilon", c.rms_norm_eps));
  add(w.AddF32("gemma3.rope.freq_base", c.rope_theta_global));
  add(w.AddU32("gemma3.attention.sliding_window", u32(c.sliding_window)));
  FGEMMA_RETURN_IF_ERROR(AddConfigExtras(c, w, add).WithContext(model_dir + "/config.json"));

  add(w.AddString("tokenizer.ggml.model", "llama"));
  add(w.AddString("tokenizer.ggml.pre", "default"));
  add(w.AddStringArray("tokenizer.ggml.tokens", vocab.spec.tokens));
  add(w.AddF32Array("tokenizer.ggml.scores", vocab.spec.scores));
  add(w.AddI32Array("tokenizer.ggml.token_type", vocab.spec.types));
  add(w.AddU32("tokenizer.ggml.bos_token_id", u32(c.bos_token_id)));
  add(w.AddU32("tokenizer.ggml.eos_token_id", u32(c.eos_token_ids[0])));
  if (vocab.unk_id >= 0) add(w.AddU32("tokenizer.ggml.unknown_token_id", u32(vocab.unk_id)));
  add(w.AddU32("tokenizer.ggml.padding_token_id", u32(c.pad_token_id)));
  add(w.AddBool("tokenizer.ggml.add_bos_token", tc.add_bos));
  add(w.AddBool("tokenizer.ggml.add_eos_token", tc.add_eos));
  add(w.AddBool("tokenizer.ggml.add_space_prefix", vocab.spec.add_space_prefix));
  if (!tc.chat_template.empty()) add(w.AddString("tokenizer.chat_template", tc.chat_template));
  if (!tc.named.empty()) {
    std::vector<std::string> names;
    for (const auto& [n, text] : tc.named) {
      add(w.AddString("tokenizer.chat_template." + n, text));
      names.push_back(n);
    }
    add(w.AddStringArray("tokenizer.chat_templates", names));
  }
  add(w.AddU32("general.file_type", GgufFileType(type)));
  return add.status;
}

Status CopyGgufMetadata(const GgufFile& source, const std::string& name, DType type, GgufWriter& w) {
  FirstError add;
  bool has_name = false, has_file_type = false;
  for (const GgufKeyValue& kv : source.metadata()) {
    if (kv.key == "general.name" && !name.empty()) {
      add(w.AddString(kv.key, name));
      has_name = true;
    } else if (kv.key == "general.file_type") {
      add(w.AddU32(kv.key, GgufFileType(type)));
      has_file_type = true;
    } else {
      add(w.AddValue(kv.key, kv.value));
    }
  }
  if (!has_name && !name.empty()) add(w.AddString("general.name", name));
  if (!has_file_type) add(w.AddU32("general.file_type", GgufFileType(type)));
  return add.status;
}

}  // namespace fgemma
