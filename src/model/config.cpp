#include "model/config.h"

#include <cmath>
#include <string_view>

#include "io/gguf_keys.h"

#include "util/mapped_file.h"

namespace fgemma {

std::vector<LayerKind> SlidingPattern(int num_layers, int pattern) {
  std::vector<LayerKind> kinds(static_cast<size_t>(num_layers), LayerKind::kSliding);
  if (pattern > 0) {
    for (int i = 0; i < num_layers; ++i) {
      if ((i + 1) % pattern == 0) kinds[static_cast<size_t>(i)] = LayerKind::kGlobal;
    }
  }
  return kinds;
}

int ModelConfig::num_global_layers() const {
  int n = 0;
  for (LayerKind k : layer_kinds) n += (k == LayerKind::kGlobal);
  return n;
}

namespace {

struct FieldName {
  const char* hf;
  std::string_view gguf;
};

}  // namespace

Status ModelConfig::ValidateSizes(KeyNames names) const {
  namespace k = gguf_key;
  auto name = [names](const FieldName& f) {
    return names == KeyNames::kGguf ? std::string(f.gguf) : std::string(f.hf);
  };
  auto in_range = [&](const FieldName& f, long long v, long long max) -> Status {
    const std::string field = name(f);
    if (v <= 0) return InvalidArgument("config field '" + field + "' must be positive, got " + std::to_string(v));
    if (v > max)
      return OutOfRange("config field '" + field + "' is " + std::to_string(v) + ", more than the limit of " + std::to_string(max));
    return Status::Ok();
  };
  FGEMMA_RETURN_IF_ERROR(in_range({"vocab_size", "token_embd.weight rows"}, vocab_size, kMaxVocab));
  FGEMMA_RETURN_IF_ERROR(in_range({"hidden_size", k::kEmbeddingLength.name}, hidden, kMaxHidden));
  FGEMMA_RETURN_IF_ERROR(in_range({"intermediate_size", k::kFeedForwardLength.name}, intermediate, kMaxHidden));
  FGEMMA_RETURN_IF_ERROR(in_range({"num_hidden_layers", k::kBlockCount.name}, num_layers, kMaxLayers));
  FGEMMA_RETURN_IF_ERROR(in_range({"num_attention_heads", k::kHeadCount.name}, num_heads, kMaxHeads));
  FGEMMA_RETURN_IF_ERROR(in_range({"num_key_value_heads", k::kHeadCountKv.name}, num_kv_heads, kMaxHeads));
  FGEMMA_RETURN_IF_ERROR(in_range({"head_dim", k::kKeyLength.name}, head_dim, kMaxHeadDim));
  FGEMMA_RETURN_IF_ERROR(in_range({"max_position_embeddings", k::kContextLength.name}, max_position_embeddings, kMaxPositions));
  FGEMMA_RETURN_IF_ERROR(in_range({"sliding_window", k::kSlidingWindow.name}, sliding_window, kMaxPositions));
  return Status::Ok();
}

Status ModelConfig::Validate(KeyNames names) const {
  namespace k = gguf_key;
  FGEMMA_RETURN_IF_ERROR(ValidateSizes(names));
  auto name = [names](const FieldName& f) {
    return names == KeyNames::kGguf ? std::string(f.gguf) : std::string(f.hf);
  };
  if (num_heads % num_kv_heads != 0)
    return InvalidArgument("config: num_attention_heads (" + std::to_string(num_heads) +
                           ") is not a multiple of num_key_value_heads (" + std::to_string(num_kv_heads) + ")");
  if (head_dim % 2 != 0) return InvalidArgument("config: head_dim must be even for RoPE, got " + std::to_string(head_dim));
  // NaN fails every comparison, so `!(v > 0)` refuses it along with zero and negatives.
  auto finite_positive = [&](const FieldName& f, float v) -> Status {
    if (!(v > 0) || !std::isfinite(v))
      return InvalidArgument("config field '" + name(f) + "' must be a finite positive number, got " + std::to_string(v));
    return Status::Ok();
  };
  FGEMMA_RETURN_IF_ERROR(finite_positive({"rms_norm_eps", k::kRmsEpsilon.name}, rms_norm_eps));
  FGEMMA_RETURN_IF_ERROR(finite_positive({"query_pre_attn_scalar", k::kQueryPreAttnScalar.name}, query_pre_attn_scalar));
  FGEMMA_RETURN_IF_ERROR(finite_positive({"rope_theta", k::kRopeFreqBase.name}, rope_theta_global));
  FGEMMA_RETURN_IF_ERROR(finite_positive({"rope_local_base_freq", k::kRopeFreqBaseSwa.name}, rope_theta_local));
  FGEMMA_RETURN_IF_ERROR(finite_positive({"rope_scaling.factor", k::kRopeScalingFactor.name}, rope_scaling_factor));
  // An epsilon of 1 or more swamps the mean square it is added to: no trained model has one.
  if (!(rms_norm_eps < 1))
    return InvalidArgument("config field '" + name({"rms_norm_eps", k::kRmsEpsilon.name}) + "' is " +
                           std::to_string(rms_norm_eps) + ", expected a small positive number (Gemma: 1e-6)");
  auto softcap = [&](const FieldName& f, float v) -> Status {
    if (!(v >= 0) || !std::isfinite(v))
      return InvalidArgument("config field '" + name(f) + "' must be finite and not negative (0: none), got " + std::to_string(v));
    return Status::Ok();
  };
  FGEMMA_RETURN_IF_ERROR(softcap({"attn_logit_softcapping", k::kAttnLogitSoftcap.name}, attn_logit_softcap));
  FGEMMA_RETURN_IF_ERROR(softcap({"final_logit_softcapping", k::kFinalLogitSoftcap.name}, final_logit_softcap));
  if (layer_kinds.size() != static_cast<size_t>(num_layers))
    return InvalidArgument("config: layer_types has " + std::to_string(layer_kinds.size()) + " entries for " +
                           std::to_string(num_layers) + " layers");
  return Status::Ok();
}

uint64_t ModelConfig::ParameterCount() const {
  const uint64_t h = static_cast<uint64_t>(hidden);
  uint64_t per_layer = 4 * h                                             // four norms
                       + static_cast<uint64_t>(q_dim()) * h * 2           // q, o
                       + static_cast<uint64_t>(kv_dim()) * h * 2          // k, v
                       + 2 * static_cast<uint64_t>(head_dim)              // q_norm, k_norm
                       + 3 * static_cast<uint64_t>(intermediate) * h;     // gate, up, down
  return static_cast<uint64_t>(vocab_size) * h + static_cast<uint64_t>(num_layers) * per_layer + h;
}

namespace {

ModelConfig MakeConfig(const char* name, int vocab, int hidden, int inter, int layers, int heads, int kv,
                       int head_dim, int window, float qpas) {
  ModelConfig c;
  c.name = name;
  c.vocab_size = vocab;
  c.hidden = hidden;
  c.intermediate = inter;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv;
  c.head_dim = head_dim;
  c.sliding_window = window;
  c.query_pre_attn_scalar = qpas;
  c.max_position_embeddings = 32768;
  c.layer_kinds = SlidingPattern(layers, 6);
  return c;
}

}  // namespace

std::vector<std::string> KnownConfigNames() { return {"tiny-mqa", "tiny-gqa", "mini", "270m"}; }

Result<ModelConfig> ConfigByName(const std::string& name) {
  if (name == "tiny-mqa") return MakeConfig("tiny-mqa", 512, 64, 128, 8, 4, 1, 32, 8, 32);
  if (name == "tiny-gqa") return MakeConfig("tiny-gqa", 512, 96, 160, 7, 6, 2, 16, 8, 24);
  if (name == "mini") return MakeConfig("mini", 262144, 64, 128, 8, 4, 1, 32, 16, 32);
  if (name == "270m") return MakeConfig("270m", 262144, 640, 2048, 18, 4, 1, 256, 512, 256);
  std::string known;
  for (const auto& n : KnownConfigNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFound("unknown model config '" + name + "' (known: " + known + ")");
}

namespace {

// Reads an integer field; `required` fields missing are an error naming the field and file.
Status GetInt(const Json& j, const char* key, const std::string& source, int* out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return InvalidArgument(source + ": config is missing required field '" + key + "'");
    return Status::Ok();
  }
  if (!it->is_number_integer()) return InvalidArgument(source + ": field '" + key + "' must be an integer");
  const auto v = it->get<long long>();
  if (v < 0 || v > (1LL << 31) - 1) return InvalidArgument(source + ": field '" + key + "' out of range: " + std::to_string(v));
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status GetFloat(const Json& j, const char* key, const std::string& source, float* out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return InvalidArgument(source + ": config is missing required field '" + key + "'");
    return Status::Ok();
  }
  if (!it->is_number()) return InvalidArgument(source + ": field '" + key + "' must be a number");
  *out = it->get<float>();
  return Status::Ok();
}

}  // namespace

namespace {

// The object holding the text model's fields: the root of a gemma3_text config, or the
// text_config of a multimodal gemma3 one.
Result<const Json*> TextModelFields(const Json& root, const std::string& source) {
  if (!root.is_object()) return InvalidArgument(source + ": config must be a JSON object");
  const std::string model_type = root.value("model_type", std::string());
  if (model_type == "gemma3_text") return &root;
  if (model_type != "gemma3") {
    if (model_type.empty()) return InvalidArgument(source + ": config is missing required field 'model_type'");
    return Unsupported(source + ": model_type '" + model_type + "' is not supported (expected gemma3_text or gemma3)");
  }
  auto tc = root.find("text_config");
  if (tc == root.end() || !tc->is_object())
    return InvalidArgument(source + ": model_type 'gemma3' config has no 'text_config' object");
  const std::string inner = tc->value("model_type", std::string("gemma3_text"));
  if (inner != "gemma3_text") return Unsupported(source + ": text_config.model_type '" + inner + "' is not gemma3_text");
  return &*tc;
}

// Sizes, norms, RoPE bases, softcaps and special token ids; absent optional fields keep the
// defaults of ModelConfig (max_position_embeddings: 32768, query_pre_attn_scalar: head_dim).
Status ReadNumericFields(const Json& j, const std::string& source, ModelConfig* c) {
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "vocab_size", source, &c->vocab_size, true));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "hidden_size", source, &c->hidden, true));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "intermediate_size", source, &c->intermediate, true));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "num_hidden_layers", source, &c->num_layers, true));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "num_attention_heads", source, &c->num_heads, true));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "num_key_value_heads", source, &c->num_kv_heads, true));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "head_dim", source, &c->head_dim, true));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "sliding_window", source, &c->sliding_window, true));
  c->max_position_embeddings = 32768;
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "max_position_embeddings", source, &c->max_position_embeddings, false));
  c->query_pre_attn_scalar = static_cast<float>(c->head_dim);
  FGEMMA_RETURN_IF_ERROR(GetFloat(j, "query_pre_attn_scalar", source, &c->query_pre_attn_scalar, false));
  FGEMMA_RETURN_IF_ERROR(GetFloat(j, "rms_norm_eps", source, &c->rms_norm_eps, false));
  FGEMMA_RETURN_IF_ERROR(GetFloat(j, "rope_theta", source, &c->rope_theta_global, false));
  FGEMMA_RETURN_IF_ERROR(GetFloat(j, "rope_local_base_freq", source, &c->rope_theta_local, false));
  FGEMMA_RETURN_IF_ERROR(GetFloat(j, "attn_logit_softcapping", source, &c->attn_logit_softcap, false));
  FGEMMA_RETURN_IF_ERROR(GetFloat(j, "final_logit_softcapping", source, &c->final_logit_softcap, false));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "bos_token_id", source, &c->bos_token_id, false));
  FGEMMA_RETURN_IF_ERROR(GetInt(j, "pad_token_id", source, &c->pad_token_id, false));
  return Status::Ok();
}

// eos_token_id: one id or a list of them; absent keeps the default ids.
Status ReadEosTokenIds(const Json& j, const std::string& source, ModelConfig* c) {
  auto it = j.find("eos_token_id");
  if (it == j.end() || it->is_null()) return Status::Ok();
  c->eos_token_ids.clear();
  if (it->is_number_integer()) {
    c->eos_token_ids.push_back(it->get<int>());
  } else if (it->is_array()) {
    for (const auto& e : *it) {
      if (!e.is_number_integer()) return InvalidArgument(source + ": field 'eos_token_id' must hold integers");
      c->eos_token_ids.push_back(e.get<int>());
    }
  } else {
    return InvalidArgument(source + ": field 'eos_token_id' must be an integer or an array");
  }
  return Status::Ok();
}

// rope_scaling: null, or linear (its factor required) or default scaling.
Status ReadRopeScaling(const Json& j, const std::string& source, ModelConfig* c) {
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return InvalidArgument(source + ": field 'rope_scaling' must be an object or null");
  const std::string type = it->value("rope_type", it->value("type", std::string("linear")));
  if (type != "linear" && type != "default")
    return Unsupported(source + ": rope_scaling type '" + type + "' is not supported (only linear)");
  if (type == "linear") FGEMMA_RETURN_IF_ERROR(GetFloat(*it, "factor", source + " rope_scaling", &c->rope_scaling_factor, true));
  return Status::Ok();
}

// Refuses the architecture variants the forward pass does not implement.
Status CheckActivationAndTying(const Json& j, const std::string& source) {
  if (auto it = j.find("hidden_activation"); it != j.end() && it->is_string()) {
    const std::string act = it->get<std::string>();
    if (act != "gelu_pytorch_tanh" && act != "gelu")
      return Unsupported(source + ": hidden_activation '" + act + "' is not supported (gelu_pytorch_tanh)");
  }
  if (j.value("tie_word_embeddings", true) == false)
    return Unsupported(source + ": untied word embeddings are not supported (Gemma 3 ties them)");
  return Status::Ok();
}

// The kind of every layer: from layer_types when given, else every sliding_window_pattern-th
// layer global (default 6).
Status ReadLayerKinds(const Json& j, const std::string& source, ModelConfig* c) {
  auto it = j.find("layer_types");
  if (it == j.end() || it->is_null()) {
    int pattern = 6;
    FGEMMA_RETURN_IF_ERROR(GetInt(j, "sliding_window_pattern", source, &pattern, false));
    // Sizes checked before layer_kinds is sized by num_hidden_layers.
    FGEMMA_RETURN_IF_ERROR(c->ValidateSizes().WithContext(source));
    c->layer_kinds = SlidingPattern(c->num_layers, pattern);
    return Status::Ok();
  }
  if (!it->is_array()) return InvalidArgument(source + ": field 'layer_types' must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    const std::string s = t.is_string() ? t.get<std::string>() : "";
    if (s == "sliding_attention") {
      c->layer_kinds.push_back(LayerKind::kSliding);
    } else if (s == "full_attention") {
      c->layer_kinds.push_back(LayerKind::kGlobal);
    } else {
      return InvalidArgument(source + ": layer_types[" + std::to_string(i) + "] must be 'sliding_attention' or 'full_attention'");
    }
  }
  return Status::Ok();
}

// The name of the known config of the same shape (KnownConfigNames), or `fallback`, so that logs and
// bench say "270m" rather than "custom".
std::string KnownShapeName(const ModelConfig& c, const std::string& fallback) {
  std::string found = fallback;
  for (const auto& name : KnownConfigNames()) {
    auto known = ConfigByName(name);
    const ModelConfig& k = known.value();
    if (k.vocab_size == c.vocab_size && k.hidden == c.hidden && k.intermediate == c.intermediate &&
        k.num_layers == c.num_layers && k.num_heads == c.num_heads && k.num_kv_heads == c.num_kv_heads &&
        k.head_dim == c.head_dim && k.sliding_window == c.sliding_window) {
      found = name;
    }
  }
  return found;
}

}  // namespace

Result<ModelConfig> ConfigFromHfJson(const Json& root, const std::string& source) {
  // A multimodal gemma3 config keeps the text model's fields in text_config.
  FGEMMA_TRY(const Json* fields, TextModelFields(root, source));
  const Json& j = *fields;
  ModelConfig c;
  c.name = "custom";
  // The fields, each checked for type as it is read, in the order their errors are reported.
  FGEMMA_RETURN_IF_ERROR(ReadNumericFields(j, source, &c));
  FGEMMA_RETURN_IF_ERROR(ReadEosTokenIds(j, source, &c));
  FGEMMA_RETURN_IF_ERROR(ReadRopeScaling(j, source, &c));
  FGEMMA_RETURN_IF_ERROR(CheckActivationAndTying(j, source));
  FGEMMA_RETURN_IF_ERROR(ReadLayerKinds(j, source, &c));
  // Ranges and consistency, naming the HF fields.
  FGEMMA_RETURN_IF_ERROR(c.Validate().WithContext(source));
  c.name = KnownShapeName(c, c.name);
  return c;
}

Result<ModelConfig> ConfigFromHfFile(const std::string& path) {
  FGEMMA_TRY(Json j, ReadJsonFile(path));
  return ConfigFromHfJson(j, path);
}

Json ConfigToHfJson(const ModelConfig& c) {
  Json layer_types = Json::array();
  for (LayerKind k : c.layer_kinds) layer_types.push_back(k == LayerKind::kGlobal ? "full_attention" : "sliding_attention");
  Json j = {
      {"architectures", {"Gemma3ForCausalLM"}},
      {"model_type", "gemma3_text"},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden},
      {"intermediate_size", c.intermediate},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"sliding_window", c.sliding_window},
      {"sliding_window_pattern", 6},
      {"layer_types", layer_types},
      {"query_pre_attn_scalar", c.query_pre_attn_scalar},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta_global},
      {"rope_local_base_freq", c.rope_theta_local},
      {"rope_scaling", nullptr},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"attn_logit_softcapping", nullptr},
      {"final_logit_softcapping", nullptr},
      {"max_position_embeddings", c.max_position_embeddings},
      {"tie_word_embeddings", true},
      {"bos_token_id", c.bos_token_id},
      {"eos_token_id", c.eos_token_ids},
      {"pad_token_id", c.pad_token_id},
      {"torch_dtype", "bfloat16"},
  };
  if (c.rope_scaling_factor != 1.0f) j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_scaling_factor}};
  return j;
}

}  // namespace fgemma
