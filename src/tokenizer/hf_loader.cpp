// What is accepted, and why it is enough for Gemma 3:
//  - normalizer: Replace(" " -> "▁"), optionally with Prepend("▁") (older Gemma), alone or in a
//    Sequence. The space replacement is required: the vocabulary has no plain spaces.
//  - pre_tokenizer: none, or Split on " ". Gemma 3 ships the latter, but it runs after the normalizer
//    has replaced every space, so it never splits anything and BPE sees each stretch whole.
//  - model: BPE with byte_fallback, no dropout, no subword prefix/suffix; ignore_merges honoured.
//  - decoder: Replace("▁" -> " "), ByteFallback and Fuse, which is what Decode does.
//  - added tokens: matched raw (normalized: false), without lstrip/rstrip/single_word.
// Added tokens whose id lies past the vocabulary (Gemma 3's <image_soft_token>, id 262144) are left
// out: the model has no embedding row for them and GGUF vocabularies omit them, so text spelling them
// is encoded as plain text.
#include "tokenizer/hf_loader.h"

#include <algorithm>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

#include "tokenizer/hf_pipeline.h"
#include "tokenizer/json_scanner.h"
#include "util/json.h"

namespace fgemma::tokenizer_internal {
namespace {

struct AddedTokenSpec {
  int64_t id = -1;
  std::string content;
  bool special = false;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false;
};

// Everything read from the file before the model is assembled.
struct RawTokenizerJson {
  bool has_model = false;
  std::string model_type;
  Json model_options = Json::object();  // byte_fallback, dropout, ... (small values)
  // Vocabulary entries in file order: text lives in `vocab_text`.
  struct VocabEntry {
    int64_t id;
    uint32_t offset, length;
  };
  std::string vocab_text;
  std::vector<VocabEntry> vocab;
  // Merges: both sides as offsets into `merge_text`.
  std::string merge_text;
  std::vector<uint32_t> merge_offsets;  // left start, right start, right end per merge (3 per merge)
  std::vector<AddedTokenSpec> added;
  Json normalizer, pre_tokenizer, decoder, post_processor;
};

Status ParseSmall(JsonScanner& s, const std::string& what, const std::string& field, Json& out) {
  s.set_field(field);
  std::string_view raw;
  FGEMMA_RETURN_IF_ERROR(s.RawValue(raw));
  FGEMMA_TRY(out, ParseJson(raw, what + ": " + field));
  return Status::Ok();
}

Status ReadVocab(JsonScanner& s, RawTokenizerJson& raw) {
  s.set_field("model.vocab");
  raw.vocab.reserve(300000);
  return s.ForEachMember([&](const std::string& key) -> Status {
    int64_t id;
    FGEMMA_RETURN_IF_ERROR(s.ReadInt(id));
    raw.vocab.push_back({id, static_cast<uint32_t>(raw.vocab_text.size()), static_cast<uint32_t>(key.size())});
    raw.vocab_text.append(key);
    return Status::Ok();
  });
}

// A merge is ["left", "right"] (current format) or "left right" (older files; sides hold no space).
Status ReadMerges(JsonScanner& s, RawTokenizerJson& raw) {
  s.set_field("model.merges");
  raw.merge_offsets.reserve(3 * 600000);
  std::string part;
  // Errors inside name the byte offset; building "model.merges[i]" per element would cost more than
  // reading it.
  return s.ForEachElement([&](size_t) -> Status {
    raw.merge_offsets.push_back(static_cast<uint32_t>(raw.merge_text.size()));
    if (s.Peek() == '"') {
      FGEMMA_RETURN_IF_ERROR(s.ReadString(part));
      const size_t space = part.find(' ');
      if (space == std::string::npos || part.find(' ', space + 1) != std::string::npos)
        return s.Error("expected \"left right\" with exactly one space");
      raw.merge_text.append(part, 0, space);
      raw.merge_offsets.push_back(static_cast<uint32_t>(raw.merge_text.size()));
      raw.merge_text.append(part, space + 1);
    } else {
      size_t count = 0;
      FGEMMA_RETURN_IF_ERROR(s.ForEachElement([&](size_t) -> Status {
        if (++count == 2) raw.merge_offsets.push_back(static_cast<uint32_t>(raw.merge_text.size()));
        return count <= 2 ? s.AppendString(raw.merge_text) : s.SkipValue();
      }));
      if (count != 2) return s.Error("expected a pair of strings, found " + std::to_string(count));
    }
    raw.merge_offsets.push_back(static_cast<uint32_t>(raw.merge_text.size()));
    return Status::Ok();
  });
}

Status ReadModel(JsonScanner& s, const std::string& what, RawTokenizerJson& raw) {
  raw.has_model = true;
  s.set_field("model");
  return s.ForEachMember([&](const std::string& key) -> Status {
    if (key == "vocab") return ReadVocab(s, raw);
    if (key == "merges") return ReadMerges(s, raw);
    if (key == "type") {
      s.set_field("model.type");
      return s.ReadString(raw.model_type);
    }
    return ParseSmall(s, what, "model." + key, raw.model_options[key]);
  });
}

Status ReadAddedTokens(JsonScanner& s, RawTokenizerJson& raw) {
  return s.ForEachElement([&](size_t index) -> Status {
    const std::string field = "added_tokens[" + std::to_string(index) + "]";
    s.set_field(field);
    AddedTokenSpec t;
    FGEMMA_RETURN_IF_ERROR(s.ForEachMember([&](const std::string& key) -> Status {
      s.set_field(field + "." + key);
      if (key == "id") return s.ReadInt(t.id);
      if (key == "content") return s.ReadString(t.content);
      if (key == "special") return s.ReadBool(t.special);
      if (key == "single_word") return s.ReadBool(t.single_word);
      if (key == "lstrip") return s.ReadBool(t.lstrip);
      if (key == "rstrip") return s.ReadBool(t.rstrip);
      if (key == "normalized") return s.ReadBool(t.normalized);
      return s.SkipValue();
    }));
    if (t.id < 0) return s.Error("missing or negative id");
    raw.added.push_back(std::move(t));
    return Status::Ok();
  });
}

Status ReadDocument(JsonScanner& s, const std::string& what, RawTokenizerJson& raw) {
  FGEMMA_RETURN_IF_ERROR(s.ForEachMember([&](const std::string& key) -> Status {
    if (key == "model") return ReadModel(s, what, raw);
    if (key == "added_tokens") {
      s.set_field("added_tokens");
      return s.Peek() == 'n' ? s.SkipValue() : ReadAddedTokens(s, raw);
    }
    if (key == "normalizer") return ParseSmall(s, what, key, raw.normalizer);
    if (key == "pre_tokenizer") return ParseSmall(s, what, key, raw.pre_tokenizer);
    if (key == "decoder") return ParseSmall(s, what, key, raw.decoder);
    if (key == "post_processor") return ParseSmall(s, what, key, raw.post_processor);
    s.set_field(key);
    return s.SkipValue();
  }));
  s.set_field("");
  return s.ExpectEnd();
}

Status CheckModelOptions(const RawTokenizerJson& raw, const std::string& what, TokenizerModel& m) {
  if (!raw.has_model) return CorruptFile(what + ": no \"model\" section");
  if (raw.model_type.empty()) return CorruptFile(what + ": model.type is missing");
  if (raw.model_type != "BPE") return Unsupported(what + ": model.type is \"" + raw.model_type + "\"; only BPE is supported");
  const Json& o = raw.model_options;
  auto flag = [&](const char* key) { return o.contains(key) && o[key].is_boolean() && o[key].get<bool>(); };
  auto empty_or_null = [&](const char* key) {
    return !o.contains(key) || o[key].is_null() || (o[key].is_string() && o[key].get<std::string>().empty());
  };
  if (!flag("byte_fallback")) return Unsupported(what + ": model.byte_fallback is not true; encoding would not be lossless");
  if (o.contains("dropout") && !o["dropout"].is_null() && !(o["dropout"].is_number() && o["dropout"].get<double>() == 0.0))
    return Unsupported(what + ": model.dropout is set; BPE dropout is not supported");
  if (!empty_or_null("continuing_subword_prefix")) return Unsupported(what + ": model.continuing_subword_prefix is not supported");
  if (!empty_or_null("end_of_word_suffix")) return Unsupported(what + ": model.end_of_word_suffix is not supported");
  m.ignore_merges = flag("ignore_merges");
  return Status::Ok();
}

Status BuildVocab(RawTokenizerJson& raw, const std::string& what, TokenizerModel& m) {
  const size_t n = raw.vocab.size();
  if (n == 0) return CorruptFile(what + ": model.vocab is empty or missing");
  if (n > INT32_MAX) return OutOfRange(what + ": model.vocab has more than 2^31 entries");
  std::vector<int64_t> entry_of_id(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const auto& e = raw.vocab[i];
    const std::string_view text(raw.vocab_text.data() + e.offset, e.length);
    if (e.id < 0 || static_cast<size_t>(e.id) >= n)
      return CorruptFile(what + ": model.vocab: \"" + std::string(text) + "\" has id " + std::to_string(e.id) +
                         ", outside 0.." + std::to_string(n - 1) + " (ids must be dense)");
    if (entry_of_id[e.id] >= 0) return CorruptFile(what + ": model.vocab: id " + std::to_string(e.id) + " is used twice");
    entry_of_id[e.id] = static_cast<int64_t>(i);
  }
  m.text_offsets.reserve(n + 1);
  m.flags.reserve(n);
  bool in_order = true;  // tokenizer.json files list the vocabulary by id: then the text is reused
  for (size_t i = 0; i < n && in_order; ++i) in_order = raw.vocab[i].id == static_cast<int64_t>(i);
  if (in_order) {
    m.texts = std::move(raw.vocab_text);
    for (size_t id = 0; id < n; ++id) {
      const auto& e = raw.vocab[id];
      m.text_offsets.push_back(e.offset + e.length);
      m.flags.push_back(ParseByteToken(std::string_view(m.texts).substr(e.offset, e.length)) >= 0 ? kFlagByte : 0);
    }
    return Status::Ok();
  }
  m.texts.reserve(raw.vocab_text.size());
  for (size_t id = 0; id < n; ++id) {
    const auto& e = raw.vocab[entry_of_id[id]];
    const std::string_view text(raw.vocab_text.data() + e.offset, e.length);
    m.AppendToken(text, ParseByteToken(text) >= 0 ? kFlagByte : 0);
  }
  return Status::Ok();
}

Status ApplyAddedTokens(const RawTokenizerJson& raw, const std::string& what, TokenizerModel& m) {
  for (size_t i = 0; i < raw.added.size(); ++i) {
    const AddedTokenSpec& t = raw.added[i];
    const std::string field = what + ": added_tokens[" + std::to_string(i) + "] (\"" + t.content + "\")";
    if (t.id >= m.size()) continue;  // no embedding row: see the file comment
    if (m.Text(static_cast<int32_t>(t.id)) != t.content)
      return CorruptFile(field + ": id " + std::to_string(t.id) + " is \"" + std::string(m.Text(static_cast<int32_t>(t.id))) +
                         "\" in model.vocab");
    if (t.lstrip || t.rstrip || t.single_word) return Unsupported(field + ": lstrip/rstrip/single_word are not supported");
    if (t.normalized) return Unsupported(field + ": normalized added tokens are not supported");
    uint8_t& f = m.flags[t.id];
    f = static_cast<uint8_t>((f & ~kFlagByte) | kFlagAdded);
    if (t.special) f |= kFlagSpecial;
    if (!t.special && IsWhitespaceToken(t.content)) f |= kFlagPlain;
  }
  return Status::Ok();
}

// Resolves merges [begin, end) into (left, right, joined) ids, 3 per merge, -1 where absent.
void ResolveMerges(const RawTokenizerJson& raw, const TokenizerModel& m, size_t begin, size_t end, int32_t* ids) {
  constexpr size_t kBatch = 128;
  std::string_view queries[3 * kBatch];
  for (size_t base = begin; base < end; base += kBatch) {
    const size_t n = std::min(kBatch, end - base);
    for (size_t i = 0; i < n; ++i) {
      // Left and right are stored back to back, so the joined string is the span over both.
      const uint32_t* o = &raw.merge_offsets[3 * (base + i)];
      queries[3 * i] = std::string_view(raw.merge_text.data() + o[0], o[1] - o[0]);
      queries[3 * i + 1] = std::string_view(raw.merge_text.data() + o[1], o[2] - o[1]);
      queries[3 * i + 2] = std::string_view(raw.merge_text.data() + o[0], o[2] - o[0]);
    }
    m.FindMany(queries, 3 * n, ids + 3 * (base - begin));
  }
}

Status BuildMerges(const RawTokenizerJson& raw, const std::string& what, TokenizerModel& m) {
  const size_t count = raw.merge_offsets.size() / 3;
  if (count > UINT32_MAX) return OutOfRange(what + ": model.merges has too many entries");
  // Resolving 1.5 million strings waits on memory most of the time; a second thread halves the wait.
  // Lookups only read the model, so the halves need no coordination.
  std::vector<int32_t> ids(3 * count);
  const size_t half = count / 2;
  std::thread helper;
  try {
    helper = std::thread(ResolveMerges, std::cref(raw), std::cref(m), half, count, ids.data() + 3 * half);
  } catch (const std::system_error&) {
    ResolveMerges(raw, m, half, count, ids.data() + 3 * half);  // no thread available: do it here
  }
  ResolveMerges(raw, m, 0, half, ids.data());
  if (helper.joinable()) helper.join();

  m.merges.Reserve(count);
  constexpr size_t kPrefetchAhead = 16;
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count) {
      const int32_t* ahead = &ids[3 * (i + kPrefetchAhead)];
      if (ahead[0] >= 0 && ahead[1] >= 0) m.merges.Prefetch(ahead[0], ahead[1]);
    }
    const int32_t* r = &ids[3 * i];
    for (int k = 0; k < 3; ++k) {
      if (r[k] >= 0) continue;
      const uint32_t* o = &raw.merge_offsets[3 * i];
      const size_t from = k == 1 ? o[1] : o[0], to = k == 0 ? o[1] : o[2];
      return CorruptFile(what + ": model.merges[" + std::to_string(i) + "]: \"" + raw.merge_text.substr(from, to - from) +
                         "\" is not in model.vocab");
    }
    // Merges may only build tokens that text is allowed to produce (see TokenizerModel::BpeUsable);
    // FunctionGemma has none outside that set.
    if (!m.BpeUsable(r[0]) || !m.BpeUsable(r[1]) || !m.BpeUsable(r[2])) continue;
    m.merges.Set(r[0], r[1], Merge{static_cast<uint32_t>(i), r[2]});  // a repeated pair keeps its last rank, as in HF
  }
  return Status::Ok();
}

// The id that post_processor puts first (TemplateProcessing's leading SpecialToken), else "<bos>".
int32_t FindBos(const Json& post, const TokenizerModel& m) {
  if (post.is_object() && post.contains("single") && post["single"].is_array() && !post["single"].empty()) {
    const Json& first = post["single"][0];
    if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object()) {
      // Not value("id", ""): that throws when the member is there with another type.
      const Json& special = first["SpecialToken"];
      const auto id_it = special.find("id");
      if (id_it != special.end() && id_it->is_string()) {
        if (const int32_t id = m.Find(id_it->get<std::string>()); id >= 0) return id;
      }
    }
  }
  return m.Find("<bos>");
}

}  // namespace

Result<std::unique_ptr<TokenizerModel>> ParseTokenizerJson(std::string_view text, const std::string& what) {
  RawTokenizerJson raw;
  JsonScanner scanner(text, what);
  FGEMMA_RETURN_IF_ERROR(ReadDocument(scanner, what, raw));

  auto model = std::make_unique<TokenizerModel>();
  TokenizerModel& m = *model;
  FGEMMA_RETURN_IF_ERROR(CheckModelOptions(raw, what, m));
  FGEMMA_RETURN_IF_ERROR(CheckPipeline(raw.normalizer, raw.pre_tokenizer, raw.decoder, what, m.prepend_space));
  FGEMMA_RETURN_IF_ERROR(BuildVocab(raw, what, m));
  FGEMMA_RETURN_IF_ERROR(ApplyAddedTokens(raw, what, m));
  // Merges are resolved through the text index that FinishModel builds.
  FGEMMA_RETURN_IF_ERROR(FinishModel(m, what));
  FGEMMA_RETURN_IF_ERROR(BuildMerges(raw, what, m));
  m.bos_id = FindBos(raw.post_processor, m);
  m.unk_id = raw.model_options.contains("unk_token") && raw.model_options["unk_token"].is_string()
                 ? m.Find(raw.model_options["unk_token"].get<std::string>())
                 : -1;
  return model;
}

}  // namespace fgemma::tokenizer_internal
