// --lora DIR[:SCALE] of the commands that run a model (call, score, generate, bench, serve).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "model/lora_adapter.h"

namespace fgemma::cli {

// Adds --lora to `cmd`, storing its text in `spec` (loaded by LoraAdapter::LoadFor(spec, model)).
void AddLoraOption(CLI::App* cmd, std::string* spec);

}  // namespace fgemma::cli
