#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "tokenizer/bpe.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/tokenizer_model.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {

using tokenizer_internal::TokenizerModel;

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// eos ids from generation_config.json beside tokenizer.json (an int or a list); without one,
// <eos> and <end_of_turn>, which end a Gemma 3 model turn.
Result<std::vector<int32_t>> FindEosIds(const std::filesystem::path& dir, const TokenizerModel& m) {
  std::vector<int32_t> ids;
  const std::string config = (dir / "generation_config.json").string();
  if (FileExists(config)) {
    FGEMMA_TRY(Json j, ReadJsonFile(config));
    const Json eos = j.is_object() && j.contains("eos_token_id") ? j["eos_token_id"] : Json();
    auto add = [&](const Json& v) -> Status {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= m.size())
        return CorruptFile(config + ": eos_token_id " + v.dump() + " is not an id of the vocabulary");
      ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
      return Status::Ok();
    };
    if (eos.is_array()) {
      for (const Json& v : eos) FGEMMA_RETURN_IF_ERROR(add(v));
    } else if (!eos.is_null()) {
      FGEMMA_RETURN_IF_ERROR(add(eos));
    }
  }
  if (ids.empty()) {
    for (const char* name : {"<eos>", "<end_of_turn>"}) {
      if (const int32_t id = m.Find(name); id >= 0) ids.push_back(id);
    }
  }
  return ids;
}

}  // namespace

Result<Tokenizer> Tokenizer::FromFile(const std::string& path) {
  if (EndsWith(path, ".gguf")) {
    return Unsupported(path + ": reading the tokenizer from a GGUF file is not wired yet; pass the model directory "
                              "or its tokenizer.json");
  }
  std::filesystem::path file = path;
  if (IsDirectory(path)) {
    file /= "tokenizer.json";
    if (!FileExists(file.string())) return NotFound(path + ": directory has no tokenizer.json");
  }
  FGEMMA_TRY(MappedFile mapped, MappedFile::Open(file.string()));
  const std::string_view text(reinterpret_cast<const char*>(mapped.data()), mapped.size());
  FGEMMA_TRY(auto model, tokenizer_internal::ParseTokenizerJson(text, file.string()));
  FGEMMA_TRY(model->eos_ids, FindEosIds(file.parent_path(), *model));
  return Tokenizer(std::shared_ptr<const TokenizerModel>(std::move(model)));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  const TextSegment whole{text, !options.parse_special};
  EncodeOptions all = options;
  all.parse_special = true;
  return EncodeSegments(std::span<const TextSegment>(&whole, 1), all);
}

std::vector<int32_t> Tokenizer::EncodeSegments(std::span<const TextSegment> segments, const EncodeOptions& options) const {
  const TokenizerModel& m = *model_;
  // One string, so that BPE sees the same stretches as it would in the concatenation, and for each
  // byte the end of the trusted (non-content) run holding it (0 for content bytes).
  std::string joined;
  std::vector<size_t> trusted_end;
  const bool single = segments.size() == 1;
  if (!single) {
    size_t total = 0;
    for (const TextSegment& s : segments) total += s.text.size();
    joined.reserve(total);
    for (const TextSegment& s : segments) joined.append(s.text);
  }
  const std::string_view text = single ? segments[0].text : std::string_view(joined);
  // Trusted runs as [begin, end) intervals, merged across adjacent non-content segments.
  std::vector<std::pair<size_t, size_t>> runs;
  if (options.parse_special) {
    size_t offset = 0;
    for (const TextSegment& s : segments) {
      if (!s.is_content && !s.text.empty()) {
        if (!runs.empty() && runs.back().second == offset) {
          runs.back().second = offset + s.text.size();
        } else {
          runs.emplace_back(offset, offset + s.text.size());
        }
      }
      offset += s.text.size();
    }
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (options.add_bos && m.bos_id >= 0) out.push_back(m.bos_id);
  tokenizer_internal::BpeWorkspace ws;
  size_t stretch_start = 0;
  size_t run = 0;  // first run that does not end before pos
  for (size_t pos = 0; pos < text.size();) {
    while (run < runs.size() && runs[run].second <= pos) ++run;
    const bool trusted = run < runs.size() && runs[run].first <= pos;
    if (!m.added.MayStartWith(static_cast<uint8_t>(text[pos]), !trusted)) {
      ++pos;
      continue;
    }
    tokenizer_internal::AddedMatch match = m.added.Match(text, pos, !trusted);
    if (trusted && match.id >= 0 && pos + match.length > runs[run].second) {
      // A token running past the template's text is not the template's: the longest one within
      // it, or a plain (whitespace) token, which may run on into content.
      const tokenizer_internal::AddedMatch inside = m.added.Match(text.substr(0, runs[run].second), pos, false);
      const tokenizer_internal::AddedMatch plain = m.added.Match(text, pos, true);
      match = plain.length > inside.length ? plain : inside;
    }
    if (match.id < 0) {
      ++pos;
      continue;
    }
    tokenizer_internal::EncodeStretch(m, text.substr(stretch_start, pos - stretch_start), ws, out);
    out.push_back(match.id);
    pos += match.length;
    stretch_start = pos;
  }
  tokenizer_internal::EncodeStretch(m, text.substr(stretch_start), ws, out);
  return out;
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  return id >= 0 && id < model_->size() ? model_->Text(id) : std::string_view();
}

int32_t Tokenizer::TokenId(std::string_view text) const { return model_->Find(text); }
int32_t Tokenizer::vocab_size() const { return model_->size(); }
int32_t Tokenizer::bos_id() const { return model_->bos_id; }
const std::vector<int32_t>& Tokenizer::eos_ids() const { return model_->eos_ids; }

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < model_->size() && (model_->flags[id] & tokenizer_internal::kFlagSpecial) != 0;
}

bool Tokenizer::IsEos(int32_t id) const {
  return std::find(model_->eos_ids.begin(), model_->eos_ids.end(), id) != model_->eos_ids.end();
}

}  // namespace fgemma
