// The metadata half of ConvertToGguf (convert.h): GGUF keys for a Hugging Face model, or a GGUF
// file's keys carried over.
#pragma once

#include <cstdint>
#include <string>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/config.h"
#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

// Adds, in the order llama.cpp's converter writes them: general.architecture/name, the gemma3.*
// config keys (plus keys fgemma's loader reads for values that differ from Gemma 3's fixed ones:
// rope.freq_base_swa, attention.sliding_window_pattern, rope.scaling.*, softcaps), the tokenizer
// from `model_dir`/tokenizer.json (+ tokenizer_config.json: add_bos/add_eos, chat template;
// chat_template.jinja wins when present, as in transformers) and general.file_type.
// Special ids: bos, eos (the first of config.json's eos_token_id) and pad from config.json, unk from
// tokenizer.json. llama.cpp ends generation at <end_of_turn> by its text, so eos stays <eos>.
Status AddHfMetadata(const ModelConfig& config, const std::string& model_dir, const std::string& name,
                     uint32_t file_type, GgufWriter& writer);

// Every key of `source`, in order, with general.file_type replaced (or appended) by `file_type`, and
// general.name replaced by `name` unless it is empty.
Status CopyGgufMetadata(const GgufFile& source, const std::string& name, uint32_t file_type, GgufWriter& writer);

}  // namespace fgemma
