// libFuzzer harness for the tokenizer.json loader: the input is written as tokenizer.json in a
// scratch directory and loaded with Tokenizer::FromFile (the path users take); a vocabulary that
// loads then encodes and decodes a slice of the input, and decodes ids made from its bytes.
// Seeds: fuzz/corpus/tokenizer_json/ (small synthetic vocabularies).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fgemma::fuzz::ScratchDir() + "/tokenizer.json";
  fgemma::fuzz::WriteFileOrDie(path, data, size);
  auto tok = fgemma::Tokenizer::FromFile(path);
  if (!tok.ok()) return 0;
  const fgemma::Tokenizer& t = tok.value();
  const std::string_view text = fgemma::fuzz::AsText(data, std::min<size_t>(size, 256));
  fgemma::EncodeOptions eo;
  eo.parse_special = true;
  const std::vector<int32_t> ids = t.Encode(text, eo);
  (void)t.Decode(ids);
  fgemma::DecodeOptions dopt;
  dopt.skip_special = true;
  (void)t.Decode(ids, dopt);
  std::vector<int32_t> raw;
  for (size_t i = 0; i + 1 < std::min<size_t>(size, 64); i += 2) raw.push_back((data[i] | data[i + 1] << 8) - 16);
  (void)t.Decode(raw);
  return 0;
}
