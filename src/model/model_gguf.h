// GGUF (llama.cpp layout, arch gemma3) to Model.
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/config.h"
#include "util/status.h"

namespace fgemma {

class Model;
Result<ModelConfig> ConfigFromGguf(const GgufFile& file);
Result<std::unique_ptr<Model>> LoadGgufModel(const std::string& path);
// The same from a file already open: LoadModel (runtime/loaded_model.h) reads the tokenizer and the
// chat template from the same GgufFile, so the metadata is parsed once per load. The model keeps
// `file` (its tensors are views of the mapping). Not prepared for the kernels (Model::FromGguf does that).
Result<std::unique_ptr<Model>> LoadGgufModel(std::shared_ptr<const GgufFile> file);

}  // namespace fgemma
