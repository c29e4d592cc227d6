// Tokenizer for Gemma 3 / FunctionGemma: SentencePiece-style BPE over text whose spaces are written as
// "▁" (U+2581), with byte fallback and atomically matched added tokens, loaded from a Hugging Face
// tokenizer.json or built from GGUF-style vocabulary arrays.
//
// Encoding, as Hugging Face `tokenizers` does it for FunctionGemma's tokenizer.json:
//  1. Added tokens (`<start_of_turn>`, `<escape>`, `<start_function_call>`, "\n\n", `<unused7>`, ...)
//     are found in the raw text, leftmost first and longest at each position, and become one id each.
//  2. Every stretch of text between them has " " replaced by "▁" (no dummy prefix is added) and is
//     split into characters; a character that is not in the vocabulary becomes its UTF-8 bytes as
//     `<0xNN>` tokens (byte fallback).
//  3. Adjacent symbols are merged, lowest merge rank first (leftmost among equal ranks), until no
//     listed merge applies.
//
// Arbitrary bytes, not only UTF-8, are accepted and encode losslessly: a byte that does not belong to
// a well-formed UTF-8 character (stray continuation byte, overlong form, surrogate, truncated
// sequence, > U+10FFFF) is its own symbol and is encoded as its `<0xNN>` token, and so is each byte
// of a well-formed character missing from the vocabulary; embedded NULs are ordinary bytes. Hence
// Decode(Encode(s)) == s for every byte string s (with the default DecodeOptions), except that a
// literal "▁" in s comes back as " ": the vocabulary uses it to spell spaces. Hugging Face cannot
// take non-UTF-8 input at all (Rust strings); on valid UTF-8 the ids are identical.
//
// Decoding maps "▁" to " ", turns `<0xNN>` tokens back into raw bytes and concatenates. The result is
// returned as raw bytes, so a sequence of byte tokens that is not valid UTF-8 comes back unchanged
// (Hugging Face would substitute U+FFFD); on ids that decode to valid UTF-8 both agree.
//
// A Tokenizer is immutable once built: all const methods may be called from any number of threads at
// once, and copies share the same tables (copying is cheap). Encode is O(n log n) in the input length
// and keeps a bounded cache of recent words per encoding thread (about 600 KB, see word_cache.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace fgemma {

namespace tokenizer_internal {
struct TokenizerModel;
}

struct EncodeOptions {
  // Prepend bos_id() (FunctionGemma prompts start with <bos>; the chat template's text does not).
  bool add_bos = false;
  // When true, added tokens in the text are matched as single ids, as Hugging Face does. When false
  // (for untrusted input such as a user message), no control or function-calling token can come out:
  // every added token is encoded as the plain text it spells, except the whitespace-only ones
  // ("\n", "\n\n", "\t", "▁▁", ...), which carry no control meaning and keep ordinary text's ids
  // unchanged. BPE never produces an added token other than those whitespace runs, so the guarantee
  // holds for every input.
  bool parse_special = true;
};

// A piece of text to encode and whether it is client content. Content is encoded with special-token
// recognition off, whatever EncodeOptions::parse_special says: an added token is matched as one id
// only when it lies wholly inside one run of non-content segments (the chat template's own control
// tokens). The whitespace-only added tokens ("\n", "\n\n", ...) still match anywhere, across
// segment boundaries, and BPE merges run across them too, so text holding no control-token text
// encodes exactly as Encode of the concatenation would.
struct TextSegment {
  std::string_view text;
  bool is_content = true;
};

struct DecodeOptions {
  // Drop special tokens (<bos>, <eos>, <pad>, <start_of_turn>, <end_of_turn>, ...: Hugging Face's
  // `special: true`, GGUF's control type). FunctionGemma's function-calling tokens (ids 46-52) are not
  // special and are always kept, because callers parse them out of the text.
  bool skip_special = false;
};

// GGUF token types (llama.cpp's numbering), as stored in `tokenizer.ggml.token_type`.
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // special: matched atomically when parse_special, skipped by skip_special
  kUserDefined = 4,  // added token: matched atomically, never skipped
  kUnused = 5,       // never produced by encoding
  kByte = 6,         // "<0xNN>"
};

// A vocabulary as GGUF stores it (`tokenizer.ggml.*`). Merge priority comes from the scores: two
// adjacent symbols merge when their concatenation is a token, highest score first (leftmost among
// equal scores), as llama.cpp's SentencePiece tokenizer does.
struct VocabSpec {
  std::vector<std::string> tokens;
  std::vector<float> scores;    // one per token
  std::vector<int32_t> types;   // one per token, TokenType values
  int32_t bos_id = -1;          // -1: none
  std::vector<int32_t> eos_ids; // ids that end generation
  bool add_space_prefix = false;  // prepend "▁" to each text stretch (Gemma 3: false)
};

class Tokenizer {
 public:
  // `path` is a model directory containing tokenizer.json, or a tokenizer.json file. A sibling
  // generation_config.json, when present, supplies eos_ids(). GGUF files are not handled here yet
  // (kUnsupported); a GGUF reader passes its arrays to FromVocab.
  static Result<Tokenizer> FromFile(const std::string& path);
  static Result<Tokenizer> FromVocab(const VocabSpec& spec);

  // Never fails: every byte string has an encoding (see the file comment).
  std::vector<int32_t> Encode(std::string_view text, const EncodeOptions& options = {}) const;
  // The concatenation of `segments`, with control tokens only from non-content segments (see
  // TextSegment). options.parse_special = false turns them off everywhere.
  std::vector<int32_t> EncodeSegments(std::span<const TextSegment> segments, const EncodeOptions& options = {}) const;
  // kOutOfRange naming the id and its position when an id is not in [0, vocab_size()).
  Result<std::string> Decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  // The token's vocabulary string ("▁the", "<0x0A>", "<escape>"); empty for an out-of-range id.
  std::string_view TokenText(int32_t id) const;
  // Exact vocabulary lookup ("<start_of_turn>" -> 105); -1 when absent.
  int32_t TokenId(std::string_view text) const;

  int32_t vocab_size() const;
  int32_t bos_id() const;  // -1 when the vocabulary has none
  const std::vector<int32_t>& eos_ids() const;
  bool IsSpecial(int32_t id) const;  // see DecodeOptions::skip_special; false for out-of-range ids
  bool IsEos(int32_t id) const;

  // The tables themselves, for the tokenizer layer's own exporters (gguf_vocab.cpp).
  const tokenizer_internal::TokenizerModel& model() const { return *model_; }

 private:
  friend class StreamDecoder;
  explicit Tokenizer(std::shared_ptr<const tokenizer_internal::TokenizerModel> model)
      : model_(std::move(model)) {}
  std::shared_ptr<const tokenizer_internal::TokenizerModel> model_;
};

// Turns a stream of generated ids into text, emitting only whole UTF-8 characters: bytes of a
// character split across byte-fallback tokens are held until the character is complete. Bytes that
// can never complete a character are emitted as they are, so the concatenation of every Push() and
// the final Finish() equals Tokenizer::Decode of all the ids. Not thread-safe (one per stream); it
// keeps the tokenizer's tables alive.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, const DecodeOptions& options = {});

  // Text completed by this id (often empty while a character is unfinished); kOutOfRange for a bad
  // id, after which the decoder is unchanged.
  Result<std::string> Push(int32_t id);
  // Whatever is still held (an unfinished character at the end of the stream), then resets.
  std::string Finish();

 private:
  Tokenizer tokenizer_;
  DecodeOptions options_;
  std::string pending_;
};

}  // namespace fgemma
