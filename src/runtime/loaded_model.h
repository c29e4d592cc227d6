// A model as the front ends use it: the weights, the tokenizer and the identified chat template,
// found the way users lay models out (a Hugging Face directory, a .safetensors beside its
// tokenizer.json, or one .gguf file carrying all three) and checked to belong together, once.
//
// LoadModel is the one loading path of the CLI, the C API and the server. A .gguf file is opened
// and parsed once: the model, the tokenizer and the template all read the same GgufFile.
#pragma once

#include <memory>
#include <string>

#include "chat/render.h"
#include "io/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace fgemma {

struct ModelTemplate {
  TemplateKind kind = TemplateKind::kOfficial;
  std::string source;  // where it came from ("tokenizer_config.json", "GGUF metadata", "default")
};

// Made by LoadModel or LoadedModel::FromParts, which check that the parts agree; consumers
// (FunctionCaller, the C API's handles) rely on that and do not check again.
struct LoadedModel {
  std::shared_ptr<const Model> model;
  Tokenizer tokenizer;
  ModelTemplate chat_template;

  // For parts obtained elsewhere (tests, a synthesized model): refuses a tokenizer whose vocabulary
  // differs from the model's (ids past the embedding could not be looked up). `what` names the
  // model in the error.
  static Result<LoadedModel> FromParts(std::shared_ptr<const Model> model, Tokenizer tokenizer,
                                       ModelTemplate chat_template = {}, const std::string& what = "model");
};

struct LoadOptions {
  // Where the tokenizer comes from instead of the model's own files (a tokenizer.json or a directory).
  std::string tokenizer_path;
};

// Loads the model at `path` (directory, .safetensors or .gguf) with its tokenizer and chat template.
// Errors name the file: a missing path or tokenizer, a template fgemma does not render exactly
// (Unsupported), a tokenizer whose vocabulary size differs from the model's (InvalidArgument).
Result<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options = {});

// The pieces alone, for commands that need no weights (tokenize, render). `model_path` may also be
// a tokenizer.json for LoadTokenizerFor; `tokenizer_path` overrides as LoadOptions does.
Result<Tokenizer> LoadTokenizerFor(const std::string& model_path, const std::string& tokenizer_path = "");
// The model's chat template, identified. No template shipped means the official one; a template
// fgemma does not render exactly is a clear Unsupported error.
Result<ModelTemplate> LoadTemplateFor(const std::string& model_path);

}  // namespace fgemma
