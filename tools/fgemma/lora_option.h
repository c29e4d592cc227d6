// --lora DIR[:SCALE] of the commands that run a model (call, score, generate, bench, serve).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "model/lora_adapter.h"

namespace fgemma::cli {

// Adds --lora to `cmd`, storing its text in `spec`.
void AddLoraOption(CLI::App* cmd, std::string* spec);

// The adapter `spec` names, checked against `model` (null when spec is empty).
Result<std::shared_ptr<const LoraAdapter>> LoadLoraOption(const std::string& spec, const Model& model);

}  // namespace fgemma::cli
