#include "model/lora_adapter.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "io/safetensors.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mapped_file.h"
#include "util/run_limits.h"

namespace fgemma {
namespace {

constexpr const char* kConfigFile = "adapter_config.json";
constexpr const char* kWeightsFile = "adapter_model.safetensors";

// Index of a projection name in LayerWeights::kProjectionNames, or -1.
int ProjectionIndex(std::string_view name) {
  for (size_t i = 0; i < LayerWeights::kNumProjections; ++i) {
    if (name == LayerWeights::kProjectionNames[i]) return static_cast<int>(i);
  }
  return -1;
}

// The base shape [out, in] of projection `index`.
std::pair<size_t, size_t> BaseShape(const ModelConfig& c, size_t index) {
  const size_t H = static_cast<size_t>(c.hidden), Q = static_cast<size_t>(c.q_dim()),
               KV = static_cast<size_t>(c.kv_dim()), I = static_cast<size_t>(c.intermediate);
  switch (index) {
    case 0: return {Q, H};   // q_proj
    case 1: return {KV, H};  // k_proj
    case 2: return {KV, H};  // v_proj
    case 3: return {H, Q};   // o_proj
    case 4: return {I, H};   // gate_proj
    case 5: return {I, H};   // up_proj
    default: return {H, I};  // down_proj
  }
}

// The refusal for a module name that is not one of the seven projections.
Status UnsupportedModule(const std::string& module, const std::string& where) {
  if (module == "embed_tokens" || module.starts_with("lora_embedding"))
    return Unsupported(where + ": embedding adapters ('" + module + "') are not supported; only q/k/v/o/gate/up/down_proj");
  if (module == "lm_head")
    return Unsupported(where + ": head adapters ('lm_head') are not supported; only q/k/v/o/gate/up/down_proj");
  return Unsupported(where + ": unknown module '" + module +
                     "' (LoRA is supported on q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)");
}

struct AdapterConfig {
  size_t rank = 0;
  float alpha = 0;
  bool rslora = false;
  std::vector<std::string> targets;
};

// Reads and checks adapter_config.json; `path` names it in every error.
Result<AdapterConfig> ParseConfig(const Json& j, const std::string& path) {
  if (!j.is_object()) return InvalidArgument(path + ": expected a JSON object");
  auto field = [&](const char* name) -> const Json* {
    auto it = j.find(name);
    return it == j.end() ? nullptr : &*it;
  };
  auto missing = [&](const char* name) { return InvalidArgument(path + ": missing field '" + name + "'"); };
  auto set = [](const Json* v) { return v != nullptr && !v->is_null(); };
  // A flag that may be absent or false, never true.
  auto flag = [&](const char* name, bool* out) -> Status {
    const Json* v = field(name);
    *out = false;
    if (!set(v)) return Status::Ok();
    if (!v->is_boolean()) return InvalidArgument(path + ": field '" + name + "' must be a boolean");
    *out = v->get<bool>();
    return Status::Ok();
  };

  const Json* peft = field("peft_type");
  if (!set(peft)) return missing("peft_type");
  if (!peft->is_string() || peft->get<std::string>() != "LORA")
    return Unsupported(path + ": peft_type " + peft->dump() + " is not supported (only \"LORA\")");

  bool dora = false, fan_in_fan_out = false, lora_bias = false;
  FGEMMA_RETURN_IF_ERROR(flag("use_dora", &dora));
  if (dora) return Unsupported(path + ": use_dora is true: DoRA adapters are not supported (plain LoRA only)");
  FGEMMA_RETURN_IF_ERROR(flag("fan_in_fan_out", &fan_in_fan_out));
  if (fan_in_fan_out) return Unsupported(path + ": fan_in_fan_out is true (Conv1D layouts) is not supported");
  FGEMMA_RETURN_IF_ERROR(flag("lora_bias", &lora_bias));
  if (lora_bias) return Unsupported(path + ": lora_bias is true: adapters with bias terms are not supported");
  if (const Json* bias = field("bias"); set(bias) && !(bias->is_string() && bias->get<std::string>() == "none"))
    return Unsupported(path + ": bias is " + bias->dump() + ": adapters that train biases are not supported (only \"none\")");
  if (const Json* mts = field("modules_to_save"); set(mts) && !(mts->is_array() && mts->empty()))
    return Unsupported(path + ": modules_to_save is " + mts->dump() +
                       ": fully trained modules are not supported (merge them into the base instead)");
  for (const char* pattern : {"rank_pattern", "alpha_pattern"}) {
    if (const Json* p = field(pattern); set(p) && !(p->is_object() && p->empty()))
      return Unsupported(path + ": " + pattern + " is not empty: per-module ranks or alphas are not supported");
  }

  AdapterConfig c;
  const Json* r = field("r");
  if (!set(r)) return missing("r");
  if (!r->is_number_integer()) return InvalidArgument(path + ": field 'r' must be an integer, got " + r->dump());
  if (r->get<int64_t>() <= 0) return InvalidArgument(path + ": field 'r' is " + r->dump() + ": the rank must be positive");
  if (r->get<int64_t>() > 65536) return OutOfRange(path + ": field 'r' is " + r->dump() + ", more than the limit of 65536");
  c.rank = static_cast<size_t>(r->get<int64_t>());

  const Json* alpha = field("lora_alpha");
  if (!set(alpha)) return missing("lora_alpha");
  if (!alpha->is_number() || !std::isfinite(alpha->get<double>()))
    return InvalidArgument(path + ": field 'lora_alpha' must be a finite number, got " + alpha->dump());
  c.alpha = alpha->get<float>();
  FGEMMA_RETURN_IF_ERROR(flag("use_rslora", &c.rslora));

  const Json* targets = field("target_modules");
  if (!set(targets)) return missing("target_modules");
  if (targets->is_string()) {
    // PEFT takes a single name, "all-linear" (every linear layer but the head: the seven here), or
    // a regular expression, which is refused rather than guessed at.
    const std::string t = targets->get<std::string>();
    if (t == "all-linear") {
      for (const char* name : LayerWeights::kProjectionNames) c.targets.emplace_back(name);
    } else if (ProjectionIndex(t) >= 0) {
      c.targets.push_back(t);
    } else {
      return UnsupportedModule(t, path + ": target_modules");
    }
  } else if (targets->is_array()) {
    for (const Json& t : *targets) {
      if (!t.is_string()) return InvalidArgument(path + ": target_modules holds a non-string " + t.dump());
      const std::string name = t.get<std::string>();
      if (ProjectionIndex(name) < 0) return UnsupportedModule(name, path + ": target_modules");
      c.targets.push_back(name);
    }
    if (c.targets.empty()) return InvalidArgument(path + ": target_modules is empty");
  } else {
    return InvalidArgument(path + ": field 'target_modules' must be a list of module names");
  }
  return c;
}

// A tensor name split as base_model.model.model.layers.<layer>.<group>.<module>.lora_<A|B>[.<adapter>].weight.
struct TensorName {
  int layer = -1;
  std::string group;   // self_attn or mlp
  std::string module;  // q_proj, ...
  char which = 0;      // 'A' or 'B'
};

// Classifies a tensor name; everything that is not a LoRA A/B matrix of a projection is refused
// with the reason PEFT would have saved it.
Result<TensorName> ParseTensorName(const std::string& name, const std::string& where) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("lora_magnitude_vector"))
    return Unsupported(where + ": DoRA tensor '" + name + "' (lora_magnitude_vector): DoRA adapters are not supported");
  if (has("lora_embedding_") || has("embed_tokens"))
    return Unsupported(where + ": embedding adapter tensor '" + name + "' is not supported");
  if (has("lm_head")) return Unsupported(where + ": head adapter tensor '" + name + "' is not supported");
  if (has("modules_to_save") || has("original_module"))
    return Unsupported(where + ": modules_to_save tensor '" + name + "' is not supported");
  if (name.ends_with(".bias")) return Unsupported(where + ": bias tensor '" + name + "' is not supported (only bias \"none\")");

  constexpr std::string_view kPrefix = "base_model.model.model.layers.";
  auto bad = [&]() {
    return InvalidArgument(where + ": unexpected tensor '" + name +
                           "' (expected base_model.model.model.layers.N.{self_attn,mlp}.MODULE.lora_{A,B}.weight)");
  };
  if (!name.starts_with(kPrefix) || !name.ends_with(".weight")) return bad();
  std::vector<std::string> parts;
  size_t begin = kPrefix.size();
  const size_t end = name.size() - std::string_view(".weight").size();
  while (begin <= end) {
    const size_t dot = std::min(name.find('.', begin), end);
    parts.push_back(name.substr(begin, dot - begin));
    begin = dot + 1;
  }
  // layer, group, module, lora_X [, adapter name]
  if (parts.size() != 4 && parts.size() != 5) return bad();
  TensorName t;
  int layer = 0;
  const auto [p, ec] = std::from_chars(parts[0].data(), parts[0].data() + parts[0].size(), layer);
  if (ec != std::errc() || p != parts[0].data() + parts[0].size() || layer < 0) return bad();
  t.layer = layer;
  t.group = parts[1];
  t.module = parts[2];
  if (parts[3] == "lora_A") {
    t.which = 'A';
  } else if (parts[3] == "lora_B") {
    t.which = 'B';
  } else {
    return bad();
  }
  const int index = ProjectionIndex(t.module);
  if (index < 0) return UnsupportedModule(t.module, where + ": tensor '" + name + "'");
  if (t.group != (index < 4 ? "self_attn" : "mlp")) return bad();
  return t;
}

// The tensor as float32 [rows, cols] (f32, f16 or bf16 as stored).
Result<std::vector<float>> ToFloat(const SafetensorsTensor& t, const std::string& where) {
  if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16)
    return InvalidArgument(where + ": tensor '" + t.name + "' has type " + DTypeName(t.dtype) + " (expected F32, F16 or BF16)");
  if (t.shape.size() != 2) return InvalidArgument(where + ": tensor '" + t.name + "' is not a matrix");
  const TensorView view{t.dtype, static_cast<size_t>(t.shape[0]), static_cast<size_t>(t.shape[1]), t.data};
  std::vector<float> out(view.rows * view.cols);
  for (size_t r = 0; r < view.rows; ++r) DequantizeRow(view, r, out.data() + r * view.cols);
  return out;
}

bool AllFinite(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

// A NaN or infinity in A or B makes every output of the adapted layers NaN.
Status CheckFinite(const std::vector<float>& values, const SafetensorsTensor& t, const std::string& where) {
  if (AllFinite(values)) return Status::Ok();
  const size_t i = static_cast<size_t>(
      std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); }) - values.begin());
  const size_t cols = t.shape.size() == 2 ? static_cast<size_t>(t.shape[1]) : 1;
  return InvalidArgument(where + ": tensor '" + t.name + "' holds a non-finite value (" + std::to_string(values[i]) +
                         ") at [" + std::to_string(i / cols) + ", " + std::to_string(i % cols) + "]");
}

std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Result<LoraSpec> ParseLoraSpec(const std::string& text) {
  if (text.empty()) return InvalidArgument("--lora: empty adapter path");
  LoraSpec spec{text, 1.0f};
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos && colon > 0) {
    const std::string tail = text.substr(colon + 1);
    char* end = nullptr;
    const float scale = std::strtof(tail.c_str(), &end);
    if (!tail.empty() && end == tail.c_str() + tail.size()) {
      if (!std::isfinite(scale)) return InvalidArgument("--lora " + text + ": the scale must be a finite number");
      spec.dir = text.substr(0, colon);
      spec.scale = scale;
    }
  }
  return spec;
}

Result<std::shared_ptr<const LoraAdapter>> LoraAdapter::Load(const std::string& dir, const ModelConfig& config,
                                                             float user_scale) {
  FGEMMA_RETURN_IF_ERROR(CheckLoraScale(user_scale, dir + ": LoRA scale"));
  if (!IsDirectory(dir)) return NotFound(dir + ": not a directory (a LoRA adapter is a PEFT directory with " +
                                         kConfigFile + " and " + kWeightsFile + ")");
  const std::string config_path = dir + "/" + kConfigFile;
  const std::string weights_path = dir + "/" + kWeightsFile;
  if (!FileExists(config_path)) return NotFound(config_path + ": no such file (not a PEFT adapter directory?)");
  if (!FileExists(weights_path)) {
    if (FileExists(dir + "/adapter_model.bin"))
      return Unsupported(dir + "/adapter_model.bin: pickled adapters are not read; save it with safe_serialization=True");
    return NotFound(weights_path + ": no such file");
  }
  FGEMMA_TRY(std::string config_text, ReadFileToString(config_path));
  FGEMMA_TRY(Json j, ParseJson(config_text, config_path));
  FGEMMA_TRY(AdapterConfig ac, ParseConfig(j, config_path));
  FGEMMA_TRY(auto ckpt, SafetensorsCheckpoint::Open(weights_path));

  auto adapter = std::shared_ptr<LoraAdapter>(new LoraAdapter());
  adapter->dir_ = dir;
  adapter->rank_ = ac.rank;
  adapter->alpha_ = ac.alpha;
  adapter->rslora_ = ac.rslora;
  adapter->user_scale_ = user_scale;
  adapter->targets_ = ac.targets;
  const double s = ac.rslora ? ac.alpha / std::sqrt(static_cast<double>(ac.rank)) : ac.alpha / static_cast<double>(ac.rank);
  // An absurd alpha (1e308 is inf as a float) or product would turn every update into inf/NaN
  // and every head output into garbage: refused here, naming the numbers.
  FGEMMA_RETURN_IF_ERROR(CheckLoraScale(s, config_path + ": lora_alpha / " + (ac.rslora ? "sqrt(r)" : "r")));
  FGEMMA_RETURN_IF_ERROR(CheckLoraScale(s * user_scale, dir + ": LoRA scale (lora_alpha / r) x scale"));
  adapter->scale_ = static_cast<float>(s * user_scale);
  adapter->layers_.resize(static_cast<size_t>(config.num_layers));

  // Pairs the A and B tensors per (layer, projection) and checks them against the base's shapes.
  struct Pair {
    const SafetensorsTensor* a = nullptr;
    const SafetensorsTensor* b = nullptr;
  };
  std::vector<std::array<Pair, LayerWeights::kNumProjections>> pairs(static_cast<size_t>(config.num_layers));
  for (const auto& [name, tensor] : ckpt->tensors()) {
    FGEMMA_TRY(TensorName tn, ParseTensorName(name, weights_path));
    if (tn.layer >= config.num_layers)
      return InvalidArgument(weights_path + ": tensor '" + name + "' is for layer " + std::to_string(tn.layer) +
                             " but the base has " + std::to_string(config.num_layers) + " layers");
    if (std::find(ac.targets.begin(), ac.targets.end(), tn.module) == ac.targets.end())
      return InvalidArgument(weights_path + ": tensor '" + name + "' adapts " + tn.module +
                             ", which target_modules of " + kConfigFile + " does not list");
    Pair& p = pairs[static_cast<size_t>(tn.layer)][static_cast<size_t>(ProjectionIndex(tn.module))];
    const SafetensorsTensor*& slot = tn.which == 'A' ? p.a : p.b;
    if (slot != nullptr) return InvalidArgument(weights_path + ": two tensors for '" + name + "'");
    slot = &tensor;
  }

  uint64_t tensors = 0;
  for (size_t l = 0; l < pairs.size(); ++l) {
    size_t layer_rank = 0, qkv_rank = 0, gate_up_rank = 0;
    for (size_t i = 0; i < LayerWeights::kNumProjections; ++i) {
      const Pair& p = pairs[l][i];
      if (p.a == nullptr && p.b == nullptr) continue;
      const std::string stem = "base_model.model.model.layers." + std::to_string(l) + (i < 4 ? ".self_attn." : ".mlp.") +
                               LayerWeights::kProjectionNames[i];
      if (p.a == nullptr) return InvalidArgument(weights_path + ": '" + stem + ".lora_A.weight' is missing (its lora_B is present)");
      if (p.b == nullptr) return InvalidArgument(weights_path + ": '" + stem + ".lora_B.weight' is missing (its lora_A is present)");
      const auto [out, in] = BaseShape(config, i);
      const std::vector<uint64_t> want_a{ac.rank, in}, want_b{out, ac.rank};
      if (p.a->shape != want_a)
        return InvalidArgument(weights_path + ": tensor '" + p.a->name + "' has shape " + ShapeText(p.a->shape) +
                               ", expected " + ShapeText(want_a) + " ([r, in] for the base's " +
                               LayerWeights::kProjectionNames[i] + " of [" + std::to_string(out) + ", " +
                               std::to_string(in) + "], r = " + std::to_string(ac.rank) + ")");
      if (p.b->shape != want_b)
        return InvalidArgument(weights_path + ": tensor '" + p.b->name + "' has shape " + ShapeText(p.b->shape) +
                               ", expected " + ShapeText(want_b) + " ([out, r] for the base's " +
                               LayerWeights::kProjectionNames[i] + " of [" + std::to_string(out) + ", " +
                               std::to_string(in) + "], r = " + std::to_string(ac.rank) + ")");
      LoraProjection& lp = adapter->layers_[l][i];
      lp.rank = ac.rank;
      lp.in = in;
      lp.out = out;
      FGEMMA_TRY(lp.a, ToFloat(*p.a, weights_path));
      FGEMMA_TRY(std::vector<float> b, ToFloat(*p.b, weights_path));
      FGEMMA_RETURN_IF_ERROR(CheckFinite(lp.a, *p.a, weights_path));
      FGEMMA_RETURN_IF_ERROR(CheckFinite(b, *p.b, weights_path));
      // bt = s * B^T: row k holds the k-th column of B, so the update is a sum of r contiguous rows.
      lp.bt.resize(ac.rank * out);
      for (size_t o = 0; o < out; ++o) {
        for (size_t k = 0; k < ac.rank; ++k) lp.bt[k * out + o] = adapter->scale_ * b[o * ac.rank + k];
      }
      if (!AllFinite(lp.bt))
        return InvalidArgument(weights_path + ": tensor '" + p.b->name + "' times the scale " +
                               std::to_string(adapter->scale_) + " overflows a float");
      lp.a_matrix = KernelMatrix{{DType::kF32, ac.rank, in, lp.a.data()}, nullptr};
      layer_rank += ac.rank;
      if (i < 3) qkv_rank += ac.rank;
      if (i == 4 || i == 5) gate_up_rank += ac.rank;
      tensors += 2;
    }
    adapter->max_layer_rank_ = std::max({adapter->max_layer_rank_, layer_rank, qkv_rank, gate_up_rank});
  }
  if (tensors == 0) return InvalidArgument(weights_path + ": holds no LoRA tensors");

  // The adapter's identity: its config and weights as stored, then the user's scale.
  uint64_t h = Hash64(config_text);
  for (const MappedFile& f : ckpt->files()) h = Hash64(f.data(), f.size(), h);
  uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &user_scale, sizeof(scale_bits));
  adapter->fingerprint_ = Hash64(&scale_bits, sizeof(scale_bits), h);
  return std::shared_ptr<const LoraAdapter>(std::move(adapter));
}

const LoraProjection* LoraAdapter::ForTensor(const TensorSpec& spec) const {
  if (spec.role != TensorRole::kProjection || spec.layer < 0 || static_cast<size_t>(spec.layer) >= layers_.size())
    return nullptr;
  for (size_t i = 0; i < LayerWeights::kNumProjections; ++i) {
    const std::string suffix = std::string(".") + LayerWeights::kProjectionNames[i] + ".weight";
    if (spec.hf_name.ends_with(suffix)) {
      const LoraProjection& p = layers_[static_cast<size_t>(spec.layer)][i];
      return p.empty() ? nullptr : &p;
    }
  }
  return nullptr;
}

Result<std::shared_ptr<const LoraAdapter>> LoraAdapter::LoadFor(const LoraSpec& spec, const Model& model) {
  FGEMMA_TRY(std::shared_ptr<const LoraAdapter> adapter, Load(spec, model.config()));
  FGEMMA_RETURN_IF_ERROR(adapter->CheckFits(model));
  return adapter;
}

Result<std::shared_ptr<const LoraAdapter>> LoraAdapter::LoadFor(const std::string& spec, const Model& model) {
  if (spec.empty()) return std::shared_ptr<const LoraAdapter>();
  FGEMMA_TRY(LoraSpec parsed, ParseLoraSpec(spec));
  return LoadFor(parsed, model);
}

Status LoraAdapter::CheckFits(const Model& model) const {
  if (layers_.size() != static_cast<size_t>(model.config().num_layers))
    return InvalidArgument(dir_ + ": LoRA adapter loaded for " + std::to_string(layers_.size()) + " layers, the model has " +
                           std::to_string(model.config().num_layers));
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto matrices = model.layer(static_cast<int>(l)).Projections();
    for (size_t i = 0; i < LayerWeights::kNumProjections; ++i) {
      const LoraProjection& p = layers_[l][i];
      if (!p.empty() && (p.in != matrices[i]->cols || p.out != matrices[i]->rows))
        return InvalidArgument(dir_ + ": LoRA adapter of layer " + std::to_string(l) + " " + LayerWeights::kProjectionNames[i] +
                               " is for a [" + std::to_string(p.out) + ", " + std::to_string(p.in) + "] matrix, the model's is [" +
                               std::to_string(matrices[i]->rows) + ", " + std::to_string(matrices[i]->cols) + "]");
    }
  }
  return Status::Ok();
}

uint64_t LoraAdapter::bytes() const {
  uint64_t n = 0;
  for (const auto& layer : layers_) {
    for (const LoraProjection& p : layer) n += (p.a.size() + p.bt.size()) * sizeof(float);
  }
  return n;
}

void AddLoraRow(const LoraProjection& p, size_t row, float* w_row) {
  for (size_t k = 0; k < p.rank; ++k) {
    const float c = p.bt[k * p.out + row];
    const float* a = p.a.data() + k * p.in;
    for (size_t i = 0; i < p.in; ++i) w_row[i] += c * a[i];
  }
}

}  // namespace fgemma
