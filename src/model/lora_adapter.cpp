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

// The field `name` of `j`, or null when it is absent or JSON null.
const Json* SetField(const Json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Status MissingField(const std::string& path, const char* name) {
  return InvalidArgument(path + ": missing field '" + name + "'");
}

// A flag that may be absent or false, never true.
Status ReadFlag(const Json& j, const std::string& path, const char* name, bool* out) {
  const Json* v = SetField(j, name);
  *out = false;
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return InvalidArgument(path + ": field '" + name + "' must be a boolean");
  *out = v->get<bool>();
  return Status::Ok();
}

// Refuses every PEFT option that makes the adapter more than plain LoRA on the projections.
Status CheckPlainLora(const Json& j, const std::string& path) {
  const Json* peft = SetField(j, "peft_type");
  if (peft == nullptr) return MissingField(path, "peft_type");
  if (!peft->is_string() || peft->get<std::string>() != "LORA")
    return Unsupported(path + ": peft_type " + peft->dump() + " is not supported (only \"LORA\")");

  bool dora = false, fan_in_fan_out = false, lora_bias = false;
  FGEMMA_RETURN_IF_ERROR(ReadFlag(j, path, "use_dora", &dora));
  if (dora) return Unsupported(path + ": use_dora is true: DoRA adapters are not supported (plain LoRA only)");
  FGEMMA_RETURN_IF_ERROR(ReadFlag(j, path, "fan_in_fan_out", &fan_in_fan_out));
  if (fan_in_fan_out) return Unsupported(path + ": fan_in_fan_out is true (Conv1D layouts) is not supported");
  FGEMMA_RETURN_IF_ERROR(ReadFlag(j, path, "lora_bias", &lora_bias));
  if (lora_bias) return Unsupported(path + ": lora_bias is true: adapters with bias terms are not supported");
  if (const Json* bias = SetField(j, "bias"); bias != nullptr && !(bias->is_string() && bias->get<std::string>() == "none"))
    return Unsupported(path + ": bias is " + bias->dump() + ": adapters that train biases are not supported (only \"none\")");
  if (const Json* mts = SetField(j, "modules_to_save"); mts != nullptr && !(mts->is_array() && mts->empty()))
    return Unsupported(path + ": modules_to_save is " + mts->dump() +
                       ": fully trained modules are not supported (merge them into the base instead)");
  for (const char* pattern : {"rank_pattern", "alpha_pattern"}) {
    if (const Json* p = SetField(j, pattern); p != nullptr && !(p->is_object() && p->empty()))
      return Unsupported(path + ": " + pattern + " is not empty: per-module ranks or alphas are not supported");
  }
  return Status::Ok();
}

// r: a positive integer up to 65536.
Result<size_t> ReadRank(const Json& j, const std::string& path) {
  const Json* r = SetField(j, "r");
  if (r == nullptr) return MissingField(path, "r");
  if (!r->is_number_integer()) return InvalidArgument(path + ": field 'r' must be an integer, got " + r->dump());
  if (r->get<int64_t>() <= 0) return InvalidArgument(path + ": field 'r' is " + r->dump() + ": the rank must be positive");
  if (r->get<int64_t>() > 65536) return OutOfRange(path + ": field 'r' is " + r->dump() + ", more than the limit of 65536");
  return static_cast<size_t>(r->get<int64_t>());
}

Result<float> ReadAlpha(const Json& j, const std::string& path) {
  const Json* alpha = SetField(j, "lora_alpha");
  if (alpha == nullptr) return MissingField(path, "lora_alpha");
  if (!alpha->is_number() || !std::isfinite(alpha->get<double>()))
    return InvalidArgument(path + ": field 'lora_alpha' must be a finite number, got " + alpha->dump());
  return alpha->get<float>();
}

// target_modules: a list of projection names, one name, or "all-linear".
Result<std::vector<std::string>> ReadTargetModules(const Json& j, const std::string& path) {
  const Json* targets = SetField(j, "target_modules");
  if (targets == nullptr) return MissingField(path, "target_modules");
  std::vector<std::string> names;
  if (targets->is_string()) {
    // PEFT takes a single name, "all-linear" (every linear layer but the head: the seven here), or
    // a regular expression, which is refused rather than guessed at.
    const std::string t = targets->get<std::string>();
    if (t == "all-linear") {
      for (const char* name : LayerWeights::kProjectionNames) names.emplace_back(name);
    } else if (ProjectionIndex(t) >= 0) {
      names.push_back(t);
    } else {
      return UnsupportedModule(t, path + ": target_modules");
    }
  } else if (targets->is_array()) {
    for (const Json& t : *targets) {
      if (!t.is_string()) return InvalidArgument(path + ": target_modules holds a non-string " + t.dump());
      const std::string name = t.get<std::string>();
      if (ProjectionIndex(name) < 0) return UnsupportedModule(name, path + ": target_modules");
      names.push_back(name);
    }
    if (names.empty()) return InvalidArgument(path + ": target_modules is empty");
  } else {
    return InvalidArgument(path + ": field 'target_modules' must be a list of module names");
  }
  return names;
}

// Reads and checks adapter_config.json; `path` names it in every error.
Result<AdapterConfig> ParseConfig(const Json& j, const std::string& path) {
  if (!j.is_object()) return InvalidArgument(path + ": expected a JSON object");
  FGEMMA_RETURN_IF_ERROR(CheckPlainLora(j, path));
  AdapterConfig c;
  FGEMMA_TRY(c.rank, ReadRank(j, path));
  FGEMMA_TRY(c.alpha, ReadAlpha(j, path));
  FGEMMA_RETURN_IF_ERROR(ReadFlag(j, path, "use_rslora", &c.rslora));
  FGEMMA_TRY(c.targets, ReadTargetModules(j, path));
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

// The two files of a PEFT adapter directory.
struct AdapterFiles {
  std::string config;   // adapter_config.json
  std::string weights;  // adapter_model.safetensors
};

// The paths of `dir`'s adapter files, or the reason `dir` is not a readable PEFT directory.
Result<AdapterFiles> FindAdapterFiles(const std::string& dir) {
  if (!IsDirectory(dir)) return NotFound(dir + ": not a directory (a LoRA adapter is a PEFT directory with " +
                                         kConfigFile + " and " + kWeightsFile + ")");
  AdapterFiles files{dir + "/" + kConfigFile, dir + "/" + kWeightsFile};
  if (!FileExists(files.config)) return NotFound(files.config + ": no such file (not a PEFT adapter directory?)");
  if (!FileExists(files.weights)) {
    if (FileExists(dir + "/adapter_model.bin"))
      return Unsupported(dir + "/adapter_model.bin: pickled adapters are not read; save it with safe_serialization=True");
    return NotFound(files.weights + ": no such file");
  }
  return files;
}

// s = lora_alpha / r (rsLoRA: / sqrt(r)) times the user's scale. An absurd alpha (1e308 is inf as
// a float) or product would turn every update into inf/NaN and every head output into garbage:
// refused here, naming the numbers.
Result<float> AdapterScale(const AdapterConfig& ac, float user_scale, const std::string& dir, const std::string& config_path) {
  const double s = ac.rslora ? ac.alpha / std::sqrt(static_cast<double>(ac.rank)) : ac.alpha / static_cast<double>(ac.rank);
  FGEMMA_RETURN_IF_ERROR(CheckLoraScale(s, config_path + ": lora_alpha / " + (ac.rslora ? "sqrt(r)" : "r")));
  FGEMMA_RETURN_IF_ERROR(CheckLoraScale(s * user_scale, dir + ": LoRA scale (lora_alpha / r) x scale"));
  return static_cast<float>(s * user_scale);
}

// The A and B tensors of one (layer, projection); null where the file has none.
struct TensorPair {
  const SafetensorsTensor* a = nullptr;
  const SafetensorsTensor* b = nullptr;
};
using LayerPairs = std::array<TensorPair, LayerWeights::kNumProjections>;
using LayerProjections = std::array<LoraProjection, LayerWeights::kNumProjections>;

// Sorts the checkpoint's tensors into pairs per (layer, projection), refusing tensors of layers
// the base lacks, of modules the config does not target, and duplicates.
Result<std::vector<LayerPairs>> PairTensors(const SafetensorsCheckpoint& ckpt, const AdapterConfig& ac,
                                            const ModelConfig& config, const std::string& weights_path) {
  std::vector<LayerPairs> pairs(static_cast<size_t>(config.num_layers));
  for (const auto& [name, tensor] : ckpt.tensors()) {
    FGEMMA_TRY(TensorName tn, ParseTensorName(name, weights_path));
    if (tn.layer >= config.num_layers)
      return InvalidArgument(weights_path + ": tensor '" + name + "' is for layer " + std::to_string(tn.layer) +
                             " but the base has " + std::to_string(config.num_layers) + " layers");
    if (std::find(ac.targets.begin(), ac.targets.end(), tn.module) == ac.targets.end())
      return InvalidArgument(weights_path + ": tensor '" + name + "' adapts " + tn.module +
                             ", which target_modules of " + kConfigFile + " does not list");
    TensorPair& p = pairs[static_cast<size_t>(tn.layer)][static_cast<size_t>(ProjectionIndex(tn.module))];
    const SafetensorsTensor*& slot = tn.which == 'A' ? p.a : p.b;
    if (slot != nullptr) return InvalidArgument(weights_path + ": two tensors for '" + name + "'");
    slot = &tensor;
  }
  return pairs;
}

// Both tensors of the pair of projection `index` of `layer` are there, as [r, in] and [out, r]
// for the base's [out, in].
Status CheckPair(const TensorPair& p, size_t layer, size_t index, const ModelConfig& config, size_t rank,
                 const std::string& weights_path) {
  const std::string stem = "base_model.model.model.layers." + std::to_string(layer) +
                           (index < 4 ? ".self_attn." : ".mlp.") + LayerWeights::kProjectionNames[index];
  if (p.a == nullptr) return InvalidArgument(weights_path + ": '" + stem + ".lora_A.weight' is missing (its lora_B is present)");
  if (p.b == nullptr) return InvalidArgument(weights_path + ": '" + stem + ".lora_B.weight' is missing (its lora_A is present)");
  // Named copies, not a structured binding: clang 14 (the asan preset) cannot capture those.
  const auto base = BaseShape(config, index);
  const size_t out = base.first, in = base.second;
  auto check_shape = [&](const SafetensorsTensor& t, const std::vector<uint64_t>& want, const char* layout) -> Status {
    if (t.shape == want) return Status::Ok();
    return InvalidArgument(weights_path + ": tensor '" + t.name + "' has shape " + ShapeText(t.shape) + ", expected " +
                           ShapeText(want) + " (" + layout + " for the base's " + LayerWeights::kProjectionNames[index] +
                           " of [" + std::to_string(out) + ", " + std::to_string(in) + "], r = " + std::to_string(rank) + ")");
  };
  FGEMMA_RETURN_IF_ERROR(check_shape(*p.a, {rank, in}, "[r, in]"));
  return check_shape(*p.b, {out, rank}, "[out, r]");
}

// Fills `lp` from a checked pair: A as float32, and bt = scale * B^T, whose row k holds the k-th
// column of B, so the update is a sum of r contiguous rows.
Status FillProjection(const TensorPair& p, size_t index, const ModelConfig& config, size_t rank, float scale,
                      const std::string& weights_path, LoraProjection* lp) {
  const auto [out, in] = BaseShape(config, index);
  lp->rank = rank;
  lp->in = in;
  lp->out = out;
  FGEMMA_TRY(lp->a, ToFloat(*p.a, weights_path));
  FGEMMA_TRY(std::vector<float> b, ToFloat(*p.b, weights_path));
  FGEMMA_RETURN_IF_ERROR(CheckFinite(lp->a, *p.a, weights_path));
  FGEMMA_RETURN_IF_ERROR(CheckFinite(b, *p.b, weights_path));
  lp->bt.resize(rank * out);
  for (size_t o = 0; o < out; ++o) {
    for (size_t k = 0; k < rank; ++k) lp->bt[k * out + o] = scale * b[o * rank + k];
  }
  if (!AllFinite(lp->bt))
    return InvalidArgument(weights_path + ": tensor '" + p.b->name + "' times the scale " + std::to_string(scale) +
                           " overflows a float");
  lp->a_matrix = KernelMatrix{{DType::kF32, rank, in, lp->a.data()}, nullptr};
  return Status::Ok();
}

// Fills `layers` (one entry per base layer) from the pairs; returns the largest sum of ranks over
// the projections of one layer or of one input (LoraAdapter::max_layer_rank).
Result<size_t> FillLayers(const std::vector<LayerPairs>& pairs, const ModelConfig& config, size_t rank, float scale,
                          const std::string& weights_path, std::vector<LayerProjections>* layers) {
  layers->resize(pairs.size());
  uint64_t tensors = 0;
  size_t max_layer_rank = 0;
  for (size_t l = 0; l < pairs.size(); ++l) {
    size_t layer_rank = 0, qkv_rank = 0, gate_up_rank = 0;
    for (size_t i = 0; i < LayerWeights::kNumProjections; ++i) {
      const TensorPair& p = pairs[l][i];
      if (p.a == nullptr && p.b == nullptr) continue;
      FGEMMA_RETURN_IF_ERROR(CheckPair(p, l, i, config, rank, weights_path));
      FGEMMA_RETURN_IF_ERROR(FillProjection(p, i, config, rank, scale, weights_path, &(*layers)[l][i]));
      layer_rank += rank;
      if (i < 3) qkv_rank += rank;
      if (i == 4 || i == 5) gate_up_rank += rank;
      tensors += 2;
    }
    max_layer_rank = std::max({max_layer_rank, layer_rank, qkv_rank, gate_up_rank});
  }
  if (tensors == 0) return InvalidArgument(weights_path + ": holds no LoRA tensors");
  return max_layer_rank;
}

// The adapter's identity: its config and weights as stored, then the user's scale.
uint64_t AdapterFingerprint(const std::string& config_text, const SafetensorsCheckpoint& ckpt, float user_scale) {
  uint64_t h = Hash64(config_text);
  for (const MappedFile& f : ckpt.files()) h = Hash64(f.data(), f.size(), h);
  uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &user_scale, sizeof(scale_bits));
  return Hash64(&scale_bits, sizeof(scale_bits), h);
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
  // The config and weights files of the PEFT directory; the config read and checked.
  FGEMMA_TRY(AdapterFiles files, FindAdapterFiles(dir));
  FGEMMA_TRY(std::string config_text, ReadFileToString(files.config));
  FGEMMA_TRY(Json j, ParseJson(config_text, files.config));
  FGEMMA_TRY(AdapterConfig ac, ParseConfig(j, files.config));
  FGEMMA_TRY(auto ckpt, SafetensorsCheckpoint::Open(files.weights));

  auto adapter = std::shared_ptr<LoraAdapter>(new LoraAdapter());
  adapter->dir_ = dir;
  adapter->rank_ = ac.rank;
  adapter->alpha_ = ac.alpha;
  adapter->rslora_ = ac.rslora;
  adapter->user_scale_ = user_scale;
  adapter->targets_ = ac.targets;
  // The factor B is multiplied by, checked to stay finite.
  FGEMMA_TRY(adapter->scale_, AdapterScale(ac, user_scale, dir, files.config));
  // The A and B tensors paired per (layer, projection), checked against the base's shapes and
  // converted to the kernels' layout.
  FGEMMA_TRY(std::vector<LayerPairs> pairs, PairTensors(*ckpt, ac, config, files.weights));
  FGEMMA_TRY(adapter->max_layer_rank_,
             FillLayers(pairs, config, ac.rank, adapter->scale_, files.weights, &adapter->layers_));
  adapter->fingerprint_ = AdapterFingerprint(config_text, *ckpt, user_scale);
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
