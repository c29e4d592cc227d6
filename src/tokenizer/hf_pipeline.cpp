// Checks the normalizer, pre_tokenizer and decoder sections of tokenizer.json against what the
// encoder and decoder implement (see hf_loader.cpp for the accepted forms).
#include "tokenizer/hf_pipeline.h"

#include <vector>

#include "tokenizer/utf8.h"

namespace fgemma::tokenizer_internal {
namespace {

// Member readers that never throw: nlohmann's value("type", "") throws type_error.302 when the member
// exists with another type, so every read goes through these. A member of the wrong type reads as
// absent here; the `type` members, which decide what a step is, are checked first by CheckTypes so
// that a wrong type is reported as such.
std::string StringMember(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool BoolMember(const Json& j, const char* key, bool absent) {
  if (!j.is_object()) return absent;
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : absent;
}

const char* KindName(const Json& j) {
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return "null";
}

// `field.type` must be a string when present: tokenizer.json names every step by it.
Status CheckType(const Json& j, const std::string& what, const std::string& field) {
  if (!j.is_object()) return Status::Ok();
  const auto it = j.find("type");
  if (it == j.end() || it->is_string()) return Status::Ok();
  return CorruptFile(what + ": " + field + ".type: expected a string, got " + KindName(*it));
}

// The section's own type and, for a Sequence, its steps' (`list` is "normalizers" or "decoders").
Status CheckTypes(const Json& section, const std::string& what, const std::string& field, const char* list) {
  FGEMMA_RETURN_IF_ERROR(CheckType(section, what, field));
  if (list == nullptr || !section.is_object()) return Status::Ok();
  const auto steps = section.find(list);
  if (steps == section.end() || !steps->is_array()) return Status::Ok();
  for (size_t i = 0; i < steps->size(); ++i)
    FGEMMA_RETURN_IF_ERROR(CheckType((*steps)[i], what, field + "." + list + "[" + std::to_string(i) + "]"));
  return Status::Ok();
}

// A step's name for error messages: its type, else its JSON text (depth-bounded by ParseJson, so
// dump()'s recursion is safe; `replace` because dump() would throw on invalid UTF-8).
std::string TypeOf(const Json& j) {
  const std::string type = StringMember(j, "type");
  return !type.empty() ? type : j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool IsStringPattern(const Json& j, std::string_view expected) {
  return j.is_object() && j.contains("String") && j["String"].is_string() && j["String"].get<std::string>() == expected;
}

bool IsReplace(const Json& j, std::string_view from, std::string_view to) {
  return StringMember(j, "type") == "Replace" && j.contains("pattern") && IsStringPattern(j["pattern"], from) &&
         j.contains("content") && j["content"].is_string() && j["content"].get<std::string>() == to;
}

Status CheckNormalizer(const Json& n, const std::string& what, bool& prepend_space) {
  FGEMMA_RETURN_IF_ERROR(CheckTypes(n, what, "normalizer", "normalizers"));
  std::vector<Json> steps;
  if (StringMember(n, "type") == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    steps.assign(n["normalizers"].begin(), n["normalizers"].end());
  } else if (!n.is_null()) {
    steps.push_back(n);
  }
  bool replaces_spaces = false;
  for (const Json& step : steps) {
    if (IsReplace(step, " ", kSpaceMarker)) {
      replaces_spaces = true;
    } else if (StringMember(step, "type") == "Prepend" && StringMember(step, "prepend") == kSpaceMarker) {
      prepend_space = true;
    } else {
      return Unsupported(what + ": normalizer: step " + TypeOf(step) + " is not supported (only Replace(\" \" -> \"▁\") and Prepend(\"▁\"))");
    }
  }
  if (!replaces_spaces) return Unsupported(what + ": normalizer: no Replace(\" \" -> \"▁\"); this tokenizer is not SentencePiece-style BPE");
  return Status::Ok();
}

Status CheckPreTokenizer(const Json& p, const std::string& what) {
  FGEMMA_RETURN_IF_ERROR(CheckTypes(p, what, "pre_tokenizer", "pretokenizers"));
  if (p.is_null()) return Status::Ok();
  // Split on " " after spaces became "▁" finds nothing to split, whatever its behaviour.
  if (StringMember(p, "type") == "Split" && p.contains("pattern") && IsStringPattern(p["pattern"], " ") &&
      !BoolMember(p, "invert", false))
    return Status::Ok();
  return Unsupported(what + ": pre_tokenizer: " + TypeOf(p) + " is not supported (only none or Split on \" \")");
}

Status CheckDecoder(const Json& d, const std::string& what) {
  FGEMMA_RETURN_IF_ERROR(CheckTypes(d, what, "decoder", "decoders"));
  std::vector<Json> steps;
  if (StringMember(d, "type") == "Sequence" && d.contains("decoders") && d["decoders"].is_array()) {
    steps.assign(d["decoders"].begin(), d["decoders"].end());
  } else if (!d.is_null()) {
    steps.push_back(d);
  }
  bool replace = false, byte_fallback = false;
  for (const Json& step : steps) {
    const std::string type = StringMember(step, "type");
    if (IsReplace(step, kSpaceMarker, " ")) {
      replace = true;
    } else if (type == "ByteFallback") {
      byte_fallback = true;
    } else if (type != "Fuse") {
      return Unsupported(what + ": decoder: step " + TypeOf(step) + " is not supported");
    }
  }
  if (!replace || !byte_fallback)
    return Unsupported(what + ": decoder: expected Replace(\"▁\" -> \" \") and ByteFallback");
  return Status::Ok();
}

}  // namespace

Status CheckPipeline(const Json& normalizer, const Json& pre_tokenizer, const Json& decoder, const std::string& what,
                     bool& prepend_space) {
  FGEMMA_RETURN_IF_ERROR(CheckNormalizer(normalizer, what, prepend_space));
  FGEMMA_RETURN_IF_ERROR(CheckPreTokenizer(pre_tokenizer, what));
  return CheckDecoder(decoder, what);
}

}  // namespace fgemma::tokenizer_internal
