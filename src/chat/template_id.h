// Recognizing the chat template that ships with a model (tokenizer_config.json's `chat_template`,
// or a GGUF's `tokenizer.chat_template`). fgemma never executes a model's template: it renders
// natively, so it accepts only templates it renders exactly.
#pragma once

#include <string_view>

#include "chat/render.h"
#include "util/status.h"

namespace fgemma {

// kOfficial for FunctionGemma's official template, kDefaultPreamble for the GGUF-conversion
// variant that inserts the default developer preamble. Comparison is exact up to leading/trailing
// whitespace and CRLF line ends, which jinja2 does not let reach the output of these templates.
// Anything else: Unsupported, saying what it looks like and what to do.
Result<TemplateKind> IdentifyChatTemplate(std::string_view template_text);

}  // namespace fgemma
