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

}  // namespace fgemma
