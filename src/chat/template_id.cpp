#include "chat/template_id.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace fgemma {
namespace {

// The templates are recognized by length and 64-bit FNV-1a of their normalized text (see
// IdentifyChatTemplate); the texts are the fixtures chat/chat_template.jinja and
// chat/chat_template.variant-default-preamble.jinja.
struct KnownTemplate {
  TemplateKind kind;
  size_t length;
  uint64_t fnv1a;
};
constexpr KnownTemplate kKnownTemplates[] = {
    {TemplateKind::kOfficial, 13791, 0x3c001c2ecc7b4386ull},
    {TemplateKind::kDefaultPreamble, 13945, 0x5da44b34728da125ull},
};

std::string Normalize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    out.push_back(text[i]);
  }
  const auto is_ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t begin = 0, end = out.size();
  while (begin < end && is_ws(out[begin])) ++begin;
  while (end > begin && is_ws(out[end - 1])) --end;
  return out.substr(begin, end - begin);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

Result<TemplateKind> IdentifyChatTemplate(std::string_view template_text) {
  const std::string text = Normalize(template_text);
  const uint64_t hash = Fnv1a(text);
  for (const auto& known : kKnownTemplates) {
    if (known.length == text.size() && known.fnv1a == hash) return known.kind;
  }
  char id[64];
  std::snprintf(id, sizeof(id), "%zu bytes, fnv1a %016llx", text.size(), static_cast<unsigned long long>(hash));
  const bool looks_like_functiongemma = text.find("<start_function_declaration>") != std::string::npos;
  return Unsupported(std::string("unsupported chat template (") + id + "): " +
                     (looks_like_functiongemma
                          ? "it resembles FunctionGemma's but differs from the official template and from its "
                            "default-preamble variant, and fgemma renders only those exactly; use the model's "
                            "official tokenizer_config.json template"
                          : "not a FunctionGemma template (no <start_function_declaration>); fgemma renders "
                            "FunctionGemma prompts only"));
}

}  // namespace fgemma
