// Checks the normalizer, pre_tokenizer and decoder sections of tokenizer.json against what the
// encoder and decoder implement (see hf_loader.cpp for the accepted forms).
#include "tokenizer/hf_pipeline.h"

#include <vector>

#include "tokenizer/utf8.h"

namespace fgemma::tokenizer_internal {
namespace {

std::string TypeOf(const Json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : j.dump();
}

bool IsStringPattern(const Json& j, std::string_view expected) {
  return j.is_object() && j.contains("String") && j["String"].is_string() && j["String"].get<std::string>() == expected;
}

bool IsReplace(const Json& j, std::string_view from, std::string_view to) {
  return j.is_object() && j.value("type", "") == "Replace" && j.contains("pattern") && IsStringPattern(j["pattern"], from) &&
         j.contains("content") && j["content"].is_string() && j["content"].get<std::string>() == to;
}

Status CheckNormalizer(const Json& n, const std::string& what, bool& prepend_space) {
  std::vector<Json> steps;
  if (n.is_object() && n.value("type", "") == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    steps.assign(n["normalizers"].begin(), n["normalizers"].end());
  } else if (!n.is_null()) {
    steps.push_back(n);
  }
  bool replaces_spaces = false;
  for (const Json& step : steps) {
    if (IsReplace(step, " ", kSpaceMarker)) {
      replaces_spaces = true;
    } else if (step.is_object() && step.value("type", "") == "Prepend" && step.value("prepend", "") == kSpaceMarker) {
      prepend_space = true;
    } else {
      return Unsupported(what + ": normalizer: step " + TypeOf(step) + " is not supported (only Replace(\" \" -> \"▁\") and Prepend(\"▁\"))");
    }
  }
  if (!replaces_spaces) return Unsupported(what + ": normalizer: no Replace(\" \" -> \"▁\"); this tokenizer is not SentencePiece-style BPE");
  return Status::Ok();
}

Status CheckPreTokenizer(const Json& p, const std::string& what) {
  if (p.is_null()) return Status::Ok();
  // Split on " " after spaces became "▁" finds nothing to split, whatever its behaviour.
  if (p.is_object() && p.value("type", "") == "Split" && p.contains("pattern") && IsStringPattern(p["pattern"], " ") &&
      !p.value("invert", false))
    return Status::Ok();
  return Unsupported(what + ": pre_tokenizer: " + TypeOf(p) + " is not supported (only none or Split on \" \")");
}

Status CheckDecoder(const Json& d, const std::string& what) {
  std::vector<Json> steps;
  if (d.is_object() && d.value("type", "") == "Sequence" && d.contains("decoders") && d["decoders"].is_array()) {
    steps.assign(d["decoders"].begin(), d["decoders"].end());
  } else if (!d.is_null()) {
    steps.push_back(d);
  }
  bool replace = false, byte_fallback = false;
  for (const Json& step : steps) {
    const std::string type = step.is_object() ? step.value("type", "") : "";
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
