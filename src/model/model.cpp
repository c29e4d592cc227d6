#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "io/safetensors.h"
#include "model/model_gguf.h"
#include "util/hash.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

// Decodes a 1-D norm tensor to float32 and folds in Gemma's unit offset.
std::vector<float> NormScale(const TensorView& t, bool has_unit_offset) {
  std::vector<float> out(t.cols);
  DequantizeRow(t, 0, out.data());
  if (!has_unit_offset) {
    for (float& v : out) v = 1.0f + v;
  }
  return out;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Where a layer tensor of ForEachTensor lives in LayerWeights (nullptr for a name it does not list).
// `L` is LayerWeights or const LayerWeights.
template <typename Layer>
auto NormSlot(Layer& L, const std::string& n) -> decltype(&L.input_norm) {
  if (EndsWith(n, "input_layernorm.weight")) return &L.input_norm;
  if (EndsWith(n, "q_norm.weight")) return &L.q_norm;
  if (EndsWith(n, "k_norm.weight")) return &L.k_norm;
  if (EndsWith(n, "post_attention_layernorm.weight")) return &L.post_attn_norm;
  if (EndsWith(n, "pre_feedforward_layernorm.weight")) return &L.pre_ffn_norm;
  if (EndsWith(n, "post_feedforward_layernorm.weight")) return &L.post_ffn_norm;
  return nullptr;
}

template <typename Layer>
auto ProjectionSlot(Layer& L, const std::string& n) -> decltype(&L.q_proj) {
  const auto slots = L.Projections();
  for (size_t i = 0; i < slots.size(); ++i) {
    if (EndsWith(n, std::string(LayerWeights::kProjectionNames[i]) + ".weight")) return slots[i];
  }
  return nullptr;
}

std::string DirName(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Assemble(const ModelConfig& config, const TensorLookup& lookup,
                                               bool norms_have_unit_offset, std::shared_ptr<void> owner,
                                               std::string source) {
  FGEMMA_RETURN_IF_ERROR(config.Validate());
  auto model = std::unique_ptr<Model>(new Model());
  model->config_ = config;
  model->owner_ = std::move(owner);
  model->source_ = std::move(source);
  model->layers_.resize(static_cast<size_t>(config.num_layers));
  for (int i = 0; i < config.num_layers; ++i) model->layers_[static_cast<size_t>(i)].kind = config.layer_kinds[static_cast<size_t>(i)];

  Status status;
  ForEachTensor(config, [&](const TensorSpec& spec) {
    if (!status.ok()) return;
    auto view = lookup(spec);
    if (!view.ok()) {
      status = view.status();
      return;
    }
    const TensorView& t = view.value();
    if (t.rows != spec.rows || t.cols != spec.cols) {
      status = InvalidArgument("tensor '" + spec.hf_name + "' has shape [" + std::to_string(t.rows) + ", " +
                               std::to_string(t.cols) + "], config expects [" + std::to_string(spec.rows) + ", " +
                               std::to_string(spec.cols) + "]");
      return;
    }
    if (spec.role == TensorRole::kNorm && DTypeIsQuantized(t.dtype)) {
      status = Unsupported("norm tensor '" + spec.hf_name + "' is quantized; norms must be float");
      return;
    }
    if (spec.layer < 0) {
      if (spec.role == TensorRole::kEmbedding) {
        model->embedding_ = KernelMatrix{t};
      } else {
        model->final_norm_ = NormScale(t, norms_have_unit_offset);
      }
      return;
    }
    LayerWeights& L = model->layers_[static_cast<size_t>(spec.layer)];
    if (spec.role == TensorRole::kNorm) {
      if (auto* slot = NormSlot(L, spec.hf_name)) *slot = NormScale(t, norms_have_unit_offset);
      return;
    }
    if (auto* slot = ProjectionSlot(L, spec.hf_name)) *slot = KernelMatrix{t};
  });
  FGEMMA_RETURN_IF_ERROR(status);
  model->embedding_scale_ = static_cast<float>(std::sqrt(static_cast<double>(config.hidden)));
  // Fingerprint: the config's JSON, then per tensor its type, shape and 64 bytes at 16 evenly
  // spaced offsets (reads a few pages, not the weights).
  uint64_t fp = Hash64(ConfigToHfJson(config).dump());
  auto mix = [&](const TensorView& t) {
    const uint64_t header[3] = {static_cast<uint64_t>(t.dtype), t.rows, t.cols};
    fp = Hash64(header, sizeof(header), fp);
    const size_t bytes = t.bytes();
    for (size_t k = 0; k < 16 && bytes > 0; ++k) {
      const size_t at = bytes > 64 ? (bytes - 64) / 15 * k : 0;
      fp = Hash64(static_cast<const uint8_t*>(t.data) + at, std::min<size_t>(64, bytes), fp);
    }
  };
  mix(model->embedding_);
  for (const auto& L : model->layers_) {
    for (const KernelMatrix* m : L.Projections()) mix(*m);
    for (const auto* n : {&L.input_norm, &L.q_norm, &L.k_norm, &L.post_attn_norm, &L.pre_ffn_norm, &L.post_ffn_norm})
      fp = Hash64(n->data(), n->size() * sizeof(float), fp);
  }
  model->fingerprint_ = Hash64(model->final_norm_.data(), model->final_norm_.size() * sizeof(float), fp);
  return model;
}

void Model::PrepareForKernels(int threads) {
  std::vector<KernelMatrix*> matrices = {&embedding_};
  for (auto& L : layers_) {
    for (KernelMatrix* m : L.Projections()) matrices.push_back(m);
  }
  prepared_ = PrepareWeights(matrices, threads);
}

std::string Model::weight_type_name() const {
  const DType t = layers_.empty() ? embedding_.dtype : layers_[0].q_proj.dtype;
  for (const auto& L : layers_) {
    for (const KernelMatrix* m : L.Projections()) {
      if (m->dtype != t) return "mixed";
    }
  }
  return DTypeName(t);
}

uint64_t Model::weight_bytes() const {
  uint64_t total = embedding_.bytes() + final_norm_.size() * 4;
  for (const auto& L : layers_) {
    for (const KernelMatrix* m : L.Projections()) total += m->bytes();
  }
  return total;
}

const TensorView* Model::Matrix(const TensorSpec& spec) const {
  if (spec.role == TensorRole::kEmbedding) return &embedding_;
  if (spec.role != TensorRole::kProjection || spec.layer < 0 || spec.layer >= config_.num_layers) return nullptr;
  return ProjectionSlot(layers_[static_cast<size_t>(spec.layer)], spec.hf_name);
}

const std::vector<float>* Model::Norm(const TensorSpec& spec) const {
  if (spec.role != TensorRole::kNorm) return nullptr;
  if (spec.layer < 0) return &final_norm_;
  if (spec.layer >= config_.num_layers) return nullptr;
  return NormSlot(layers_[static_cast<size_t>(spec.layer)], spec.hf_name);
}

namespace {

Result<std::unique_ptr<Model>> LoadSafetensors(const std::string& path) {
  const std::string dir = IsDirectory(path) ? path : DirName(path);
  const std::string config_path = dir + "/config.json";
  if (!FileExists(config_path)) return NotFound(config_path + ": config.json not found beside the weights");
  FGEMMA_TRY(ModelConfig config, ConfigFromHfFile(config_path));
  FGEMMA_TRY(std::unique_ptr<SafetensorsCheckpoint> ckpt, SafetensorsCheckpoint::Open(path));
  SafetensorsCheckpoint* st = ckpt.get();
  // Multimodal gemma3 checkpoints prefix text weights with "language_model.".
  auto lookup = [st](const TensorSpec& spec) -> Result<TensorView> {
    const SafetensorsTensor* t = st->Find(spec.hf_name);
    if (t == nullptr) t = st->Find("language_model." + spec.hf_name);
    if (t == nullptr) return NotFound("checkpoint has no tensor '" + spec.hf_name + "'");
    const bool shape_ok = spec.is_1d ? (t->shape.size() == 1 && t->shape[0] == spec.cols)
                                     : (t->shape.size() == 2 && t->shape[0] == spec.rows && t->shape[1] == spec.cols);
    if (!shape_ok) {
      std::string got;
      for (uint64_t d : t->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      const std::string want = spec.is_1d ? std::to_string(spec.cols) : std::to_string(spec.rows) + ", " + std::to_string(spec.cols);
      return InvalidArgument(*t->file + ": tensor '" + t->name + "' has shape [" + got + "], config expects [" + want + "]");
    }
    TensorView v;
    v.dtype = t->dtype;
    v.rows = static_cast<size_t>(spec.rows);
    v.cols = static_cast<size_t>(spec.cols);
    v.data = t->data;
    return v;
  };
  // A tensor the model does not use means the file is not what config.json says: refuse it rather
  // than silently ignore weights (multimodal checkpoints' vision tower is the known exception).
  std::set<std::string> expected;
  ForEachTensor(config, [&](const TensorSpec& s) { expected.insert(s.hf_name); });
  for (const auto& [name, t] : st->tensors()) {
    const std::string bare = name.rfind("language_model.", 0) == 0 ? name.substr(15) : name;
    if (expected.count(bare)) continue;
    if (name.rfind("vision_tower.", 0) == 0 || name.rfind("multi_modal_projector.", 0) == 0) continue;
    return InvalidArgument(*t.file + ": unknown tensor '" + name + "' (not part of a " + std::to_string(config.num_layers) +
                           "-layer Gemma 3 text model)");
  }
  std::shared_ptr<SafetensorsCheckpoint> owner(std::move(ckpt));
  return Model::Assemble(config, lookup, /*norms_have_unit_offset=*/false, owner, path);
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, const ModelLoadOptions& options) {
  if (!FileExists(path)) return NotFound(path + ": no such file or directory");
  auto model = EndsWith(path, ".gguf") ? LoadGgufModel(path) : LoadSafetensors(path);
  if (!model.ok()) return model.status().WithContext("loading " + path);
  if (options.prepare_for_kernels) model.value()->PrepareForKernels(options.prepare_threads);
  return model;
}

Result<std::unique_ptr<Model>> Model::FromGguf(std::shared_ptr<const GgufFile> file, const ModelLoadOptions& options) {
  const std::string name = file->name();
  auto model = LoadGgufModel(std::move(file));
  if (!model.ok()) return model.status().WithContext("loading " + name);
  if (options.prepare_for_kernels) model.value()->PrepareForKernels(options.prepare_threads);
  return model;
}

}  // namespace fgemma
