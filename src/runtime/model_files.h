// What comes with a model besides its weights: the tokenizer and the chat template, found the way
// users lay models out (a Hugging Face directory, a .safetensors beside its tokenizer.json, or one
// .gguf file carrying both in its metadata).
#pragma once

#include <string>

#include "chat/render.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace fgemma {

// `tokenizer_path` overrides where the tokenizer comes from (a tokenizer.json or a directory).
Result<Tokenizer> LoadTokenizerFor(const std::string& model_path, const std::string& tokenizer_path = "");

struct ModelTemplate {
  TemplateKind kind = TemplateKind::kOfficial;
  std::string source;  // where it came from ("tokenizer_config.json", "GGUF metadata", "default")
};
// The model's chat template, identified. No template shipped means the official one; a template
// fgemma does not render exactly is a clear Unsupported error.
Result<ModelTemplate> LoadTemplateFor(const std::string& model_path);

}  // namespace fgemma
