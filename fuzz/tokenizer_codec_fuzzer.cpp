// libFuzzer harness for Encode/Decode with FunctionGemma's real vocabulary (the fixture
// mini-bf16/tokenizer.json, loaded once): arbitrary bytes must encode, and decoding the ids must
// give the bytes back (the tokenizer's documented round trip, where a literal "▁" comes back as " ";
// plain text, no special parsing).
// Ids built from the input bytes, in and out of range, must decode or fail cleanly; the streaming
// decoder must agree with Decode. Seeds: fuzz/corpus/tokenizer_codec/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace {

const fgemma::Tokenizer& Tok() {
  static const fgemma::Tokenizer tok = [] {
    auto t = fgemma::Tokenizer::FromFile(FGEMMA_SHARED_DIR "/fixtures/models/mini-bf16");
    if (!t.ok()) {
      std::fprintf(stderr, "cannot load the fixture tokenizer: %s\n", t.status().ToString().c_str());
      std::abort();
    }
    return t.value();
  }();
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)Tok();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fgemma::Tokenizer& t = Tok();
  const std::string_view text = fgemma::fuzz::AsText(data, size);
  const std::vector<int32_t> ids = t.Encode(text);
  auto back = t.Decode(ids);
  std::string expected(text);
  for (size_t p = 0; (p = expected.find("\xE2\x96\x81", p)) != std::string::npos;) expected.replace(p, 3, " ");
  if (!back.ok() || back.value() != expected) {
    std::fprintf(stderr, "round trip failed on %zu bytes\n", size);
    std::abort();
  }
  fgemma::EncodeOptions special;
  special.parse_special = true;
  special.add_bos = true;
  (void)t.Decode(t.Encode(text, special));
  std::vector<int32_t> raw;
  for (size_t i = 0; i + 3 < std::min<size_t>(size, 256); i += 4) {
    raw.push_back(static_cast<int32_t>(data[i] | data[i + 1] << 8 | data[i + 2] << 16 | uint32_t{data[i + 3]} << 24) % 270000);
  }
  auto decoded = t.Decode(raw);
  fgemma::StreamDecoder stream(t);
  std::string streamed;
  bool stream_ok = true;
  for (int32_t id : raw) {
    auto piece = stream.Push(id);
    if (!piece.ok()) { stream_ok = false; break; }
    streamed += piece.value();
  }
  if (stream_ok) {
    streamed += stream.Finish();
    if (decoded.ok() && streamed != decoded.value()) {
      std::fprintf(stderr, "stream decoder disagrees with Decode\n");
      std::abort();
    }
  }
  return 0;
}
