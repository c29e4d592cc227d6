// ConvertToGguf / `fgemma convert`: the mini Hugging Face directory converts to the llama.cpp fixture
// files tensor for tensor (and, given their name and no chat template, byte for byte); converted
// files load to the same logits; GGUF -> GGUF re-quantization; errors.
#include "convert/convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "io/gguf.h"
#include "util/weight_types.h"
#include "io/io_test_util.h"
#include "model/model.h"
#include "runtime/session.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

namespace fs = std::filesystem;
using test::Contains;

// A fresh temporary directory, removed with everything in it (the outputs are tens of MB) at scope end.
struct ScratchDir {
  std::string path = test::TempDir();
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string MiniDir() { return test::FixturePath("models/mini-bf16"); }
std::string MiniGguf(const std::string& type) { return test::FixturePath("models/mini-" + type + ".gguf"); }

ConvertResult MustConvert(const std::string& source, const std::string& out, DType type, const std::string& name = "") {
  ConvertOptions o;
  o.type = type;
  o.name = name;
  auto r = ConvertToGguf(source, out, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : ConvertResult{};
}

GgufFile MustOpen(const std::string& path) {
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f).value() : GgufFile();
}

// Same tensors in the same order: names, dims, ggml types and data bytes.
void ExpectSameTensors(const GgufFile& ours, const GgufFile& ref) {
  ASSERT_EQ(ours.tensors().size(), ref.tensors().size());
  for (size_t i = 0; i < ref.tensors().size(); ++i) {
    const GgufTensorInfo& a = ours.tensors()[i];
    const GgufTensorInfo& b = ref.tensors()[i];
    ASSERT_EQ(a.name, b.name) << "tensor #" << i;
    EXPECT_EQ(a.n_dims, b.n_dims) << a.name;
    EXPECT_EQ(a.ne, b.ne) << a.name;
    EXPECT_EQ(a.ggml_type, b.ggml_type) << a.name;
    ASSERT_EQ(a.n_bytes, b.n_bytes) << a.name;
    EXPECT_EQ(std::memcmp(ours.TensorData(a), ref.TensorData(b), a.n_bytes), 0) << a.name << " data differs";
  }
}

bool SameValue(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type) return false;
  if (a.type == GgufType::kString) return a.string == b.string;
  if (a.type != GgufType::kArray) return a.scalar_bits == b.scalar_bits;
  if (a.array_type != b.array_type || a.array_count != b.array_count) return false;
  if (a.array_type == GgufType::kString) return a.array_strings == b.array_strings;
  return std::memcmp(a.array_data, b.array_data, a.array_count * GgufTypeSize(a.array_type)) == 0;
}

struct MetadataDiff {
  std::set<std::string> differing, missing, extra;
};

MetadataDiff CompareMetadata(const GgufFile& ours, const GgufFile& ref) {
  MetadataDiff d;
  for (const GgufKeyValue& kv : ref.metadata()) {
    const GgufValue* v = ours.Find(kv.key);
    if (v == nullptr) {
      d.missing.emplace(kv.key);
    } else if (!SameValue(*v, kv.value)) {
      d.differing.emplace(kv.key);
    }
  }
  for (const GgufKeyValue& kv : ours.metadata()) {
    if (!ref.Has(kv.key)) d.extra.emplace(kv.key);
  }
  return d;
}

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& k : s) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "(none)" : out;
}

bool SameFileBytes(const std::string& a, const std::string& b) {
  auto fa = MappedFile::Open(a);
  auto fb = MappedFile::Open(b);
  if (!fa.ok() || !fb.ok() || fa->size() != fb->size()) return false;
  return std::memcmp(fa->data(), fb->data(), fa->size()) == 0;
}

// A copy of the mini directory (symlinks) whose tokenizer_config.json has no chat_template: the
// fixture GGUFs were written without one.
std::string MiniDirWithoutTemplate(const std::string& root) {
  const std::string dir = root + "/mini-no-template";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"})
    fs::create_symlink(MiniDir() + "/" + f, dir + "/" + f);
  Json tc = ReadJsonFile(MiniDir() + "/tokenizer_config.json").value();
  tc.erase("chat_template");
  EXPECT_TRUE(WriteStringToFile(dir + "/tokenizer_config.json", tc.dump()).ok());
  return dir;
}

const char* const kFixtureTypes[] = {"bf16", "q8_0", "q4_0"};

class ConvertFromHf : public ::testing::TestWithParam<const char*> {};

TEST_P(ConvertFromHf, TensorsAndMetadataMatchTheLlamaCppFixture) {
  const std::string type = GetParam();
  const ScratchDir scratch;
  const std::string out = scratch.path + "/mini-" + type + ".gguf";
  const ConvertResult r = MustConvert(MiniDir(), out, DTypeFromName(type).value());
  EXPECT_EQ(r.tensor_count, 106u);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.file_bytes, fs::file_size(out));
  const GgufFile ours = MustOpen(out);
  const GgufFile ref = MustOpen(MiniGguf(type));
  ExpectSameTensors(ours, ref);

  // Intended differences: general.name defaults to the directory's name (the fixtures say
  // "synthetic gemma3"), and the official chat template is carried over from tokenizer_config.json.
  const MetadataDiff d = CompareMetadata(ours, ref);
  std::printf("[%s] metadata: differing %s; missing %s; extra %s\n", type.c_str(), Join(d.differing).c_str(),
              Join(d.missing).c_str(), Join(d.extra).c_str());
  EXPECT_EQ(d.differing, std::set<std::string>{"general.name"});
  EXPECT_TRUE(d.missing.empty());
  EXPECT_EQ(d.extra, std::set<std::string>{"tokenizer.chat_template"});
  EXPECT_EQ(ours.GetString("general.name").value(), "mini-bf16");
  const Json tc = ReadJsonFile(MiniDir() + "/tokenizer_config.json").value();
  EXPECT_EQ(ours.GetString("tokenizer.chat_template").value(), tc["chat_template"].get<std::string>());
  ASSERT_TRUE(ours.ReadTokenizer().ok());
}

TEST_P(ConvertFromHf, WithTheFixturesNameAndNoTemplateTheWholeFileIsIdentical) {
  const std::string type = GetParam();
  const ScratchDir scratch;
  const std::string& root = scratch.path;
  const std::string out = root + "/mini-" + type + ".gguf";
  MustConvert(MiniDirWithoutTemplate(root), out, DTypeFromName(type).value(), "synthetic gemma3");
  EXPECT_TRUE(SameFileBytes(out, MiniGguf(type))) << out << " differs from " << MiniGguf(type);
}

INSTANTIATE_TEST_SUITE_P(Types, ConvertFromHf, ::testing::ValuesIn(kFixtureTypes));

// Logits of the last of the mini golden tokens.
std::vector<float> LastLogits(const std::string& path) {
  auto loaded = Model::Load(path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return {};
  auto model = std::shared_ptr<const Model>(std::move(loaded).value());
  const Json golden = test::LoadGolden("mini-bf16.json");
  std::vector<int32_t> tokens;
  for (const auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
  SessionOptions o;
  o.context = 128;
  o.threads = 2;
  auto s = Session::Create(model, o).value();
  std::vector<float> logits(static_cast<size_t>(model->config().vocab_size));
  HeadRequest h;
  h.index = tokens.size() - 1;
  h.logits = logits.data();
  EXPECT_TRUE(s->Evaluate(tokens, std::span<HeadRequest>(&h, 1)).ok());
  return logits;
}

TEST(Convert, ConvertedFilesLoadToTheDirectorysLogits) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  const std::vector<float> ref = LastLogits(MiniDir());
  for (const char* type : {"f32", "bf16"}) {
    const std::string out = dir + "/mini-" + type + ".gguf";
    MustConvert(MiniDir(), out, DTypeFromName(type).value());
    const std::vector<float> got = LastLogits(out);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0) << type << ": logits not bit-exact";
  }
  // bf16 weights are exact in f16 unless they fall outside its range or precision (tiny values).
  const std::string out = dir + "/mini-f16.gguf";
  MustConvert(MiniDir(), out, DType::kF16);
  EXPECT_EQ(MustOpen(out).GetU32("general.file_type").value(), 1u);
  const std::vector<float> got = LastLogits(out);
  ASSERT_EQ(got.size(), ref.size());
  double max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) max_diff = std::max(max_diff, static_cast<double>(std::abs(got[i] - ref[i])));
  std::printf("f16: max |logit - bf16 directory's| = %.3g\n", max_diff);
  EXPECT_LT(max_diff, 1e-2);
}

TEST(Convert, GgufToGgufEqualsHfToGguf) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  // bf16.gguf -> q8_0 / q4_0: quantized from the float source, exactly as from the directory; the
  // metadata is carried over with general.file_type changed, which reproduces the fixtures entirely.
  for (const char* type : {"q8_0", "q4_0"}) {
    const std::string from_gguf = dir + "/from-gguf-" + type + ".gguf";
    const std::string from_hf = dir + "/from-hf-" + type + ".gguf";
    const ConvertResult r = MustConvert(MiniGguf("bf16"), from_gguf, DTypeFromName(type).value());
    EXPECT_TRUE(r.warnings.empty());
    EXPECT_EQ(r.source_type, "bf16");
    MustConvert(MiniDir(), from_hf, DTypeFromName(type).value());
    ExpectSameTensors(MustOpen(from_gguf), MustOpen(from_hf));
    EXPECT_TRUE(SameFileBytes(from_gguf, MiniGguf(type))) << type;
  }
  // Same type: copied, not re-encoded.
  const std::string copy = dir + "/copy-q4_0.gguf";
  EXPECT_TRUE(MustConvert(MiniGguf("q4_0"), copy, DType::kQ4_0).warnings.empty());
  EXPECT_TRUE(SameFileBytes(copy, MiniGguf("q4_0")));
}

TEST(Convert, RequantizingAQuantizedSourceWarnsAndDequantizesFirst) {
  const ScratchDir scratch;
  const std::string out = scratch.path + "/q4-to-q8.gguf";
  std::vector<std::string> warned;
  ConvertOptions o;
  o.type = DType::kQ8_0;
  o.warning = [&](const std::string& w) { warned.push_back(w); };
  auto r = ConvertToGguf(MiniGguf("q4_0"), out, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(r->warnings, warned);
  EXPECT_TRUE(Contains(warned[0], "q4_0")) << warned[0];
  EXPECT_TRUE(Contains(warned[0], "cannot recover")) << warned[0];
  const GgufFile ours = MustOpen(out);
  EXPECT_EQ(ours.GetU32("general.file_type").value(), 7u);
  // Each q4_0 row is decoded to float32 and quantized again: exactly QuantizeRowQ8_0 of the decoded row.
  const GgufFile src = MustOpen(MiniGguf("q4_0"));
  for (const char* name : {"token_embd.weight", "blk.3.ffn_down.weight"}) {
    const TensorView a = ours.GetTensorView(name).value();
    const TensorView b = src.GetTensorView(name).value();
    ASSERT_EQ(a.dtype, DType::kQ8_0);
    std::vector<uint8_t> expected(a.row_bytes());
    for (size_t r = 0; r < std::min<size_t>(a.rows, 256); ++r) {
      QuantizeRowQ8_0(test::RowAsFloats(b, r).data(), b.cols, expected.data());
      ASSERT_EQ(std::memcmp(a.row(r), expected.data(), expected.size()), 0) << name << " row " << r;
    }
  }
  // Norms are float in every file and copied unchanged.
  const TensorView n = ours.GetTensorView("blk.0.attn_norm.weight").value();
  EXPECT_EQ(n.dtype, DType::kF32);
  EXPECT_EQ(std::memcmp(n.data, src.GetTensorView("blk.0.attn_norm.weight").value().data, n.bytes()), 0);
}

TEST(Convert, ProgressCountsEveryTensorByte) {
  const ScratchDir scratch;
  const std::string out = scratch.path + "/progress.gguf";
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  ConvertOptions o;
  o.type = DType::kQ8_0;
  o.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  ASSERT_TRUE(ConvertToGguf(MiniDir(), out, o).ok());
  ASSERT_GT(calls.size(), 106u);  // the embedding alone spans several blocks
  uint64_t data = 0;
  const auto file = MustOpen(out);  // a named object: a range-for would destroy a temporary reader
  for (const auto& t : file.tensors()) data += t.n_bytes;
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GT(calls[i].first, calls[i - 1].first);
  EXPECT_EQ(calls.back().first, data);
  EXPECT_EQ(calls.back().second, data);
}

TEST(Convert, ErrorsAreClear) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  auto t = ParseConvertType("q3_k");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), "unknown type 'q3_k'")) << t.status().ToString();
  EXPECT_TRUE(Contains(t.status().message(), "q8_0")) << t.status().ToString();

  ConvertOptions o;
  o.type = DType::kQ8_0;
  auto missing = ConvertToGguf(dir + "/nope", dir + "/out.gguf", o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), dir + "/nope")) << missing.status().ToString();

  auto unwritable = ConvertToGguf(MiniDir(), dir + "/no/such/dir/out.gguf", o);
  ASSERT_FALSE(unwritable.ok());
  EXPECT_EQ(unwritable.status().code(), ErrorCode::kIoError);
  EXPECT_TRUE(Contains(unwritable.status().message(), dir + "/no/such/dir/out.gguf")) << unwritable.status().ToString();

  // A directory without tokenizer.json cannot give the GGUF its vocabulary; nothing is left behind.
  const std::string bare = dir + "/bare";
  fs::create_directories(bare);
  for (const char* f : {"config.json", "model.safetensors"}) fs::create_symlink(MiniDir() + "/" + f, bare + "/" + f);
  auto no_tok = ConvertToGguf(bare, dir + "/bare.gguf", o);
  ASSERT_FALSE(no_tok.ok());
  EXPECT_TRUE(Contains(no_tok.status().message(), "tokenizer.json")) << no_tok.status().ToString();
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_FALSE(Contains(e.path().filename().string(), "bare.gguf")) << e.path();
}

TEST(ConvertCli, WritesASummaryAndNoProgressBarWhenNotATerminal) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  const std::string out = dir + "/cli.gguf";
  std::string output;
  const int rc = test::RunCommand(test::CliPath() + " convert --model " + MiniDir() + " --type q4_0 --out " + out +
                                      " 2>" + dir + "/stderr.txt",
                                  &output);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_TRUE(Contains(output, "wrote " + out + ": q4_0, 16.")) << output;  // 16.x MB, like the fixture
  EXPECT_TRUE(Contains(output, " s, peak RSS ")) << output;
  EXPECT_EQ(ReadFileToString(dir + "/stderr.txt").value(), "");
  ExpectSameTensors(MustOpen(out), MustOpen(MiniGguf("q4_0")));
}

TEST(ConvertCli, ErrorsAndWarnings) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path;
  std::string output;
  const std::string cli = test::CliPath() + " convert ";
  EXPECT_EQ(test::RunCommand(cli + "--model " + MiniDir() + " --type q3_k --out " + dir + "/x.gguf 2>&1", &output), 1);
  EXPECT_TRUE(Contains(output, "fgemma: error: --type: unknown type 'q3_k' (expected f32, f16, bf16, q8_0, q4_0, q4_1, "
                               "q5_0, q5_1, q4_K, q5_K or q6_K, or a preset: q4_K_M, q5_K_M)"))
      << output;
  output.clear();
  EXPECT_EQ(test::RunCommand(cli + "--model " + dir + "/missing --type q8_0 --out " + dir + "/x.gguf 2>&1", &output), 1);
  EXPECT_TRUE(Contains(output, dir + "/missing: no such file or directory")) << output;
  output.clear();
  EXPECT_EQ(test::RunCommand(cli + "--model " + MiniDir() + " --type q8_0 --out /proc/x.gguf 2>&1", &output), 1);
  EXPECT_TRUE(Contains(output, "/proc/x.gguf")) << output;
  EXPECT_TRUE(Contains(output, "cannot open for writing")) << output;
  output.clear();
  EXPECT_EQ(test::RunCommand(cli + "--model " + MiniGguf("q4_0") + " --type q8_0 --out " + dir + "/q8.gguf 2>&1", &output), 0);
  EXPECT_TRUE(Contains(output, "fgemma: warning: the source is q4_0")) << output;
  // The output is only ever a regular file replaced through a fresh temporary (issue 16, finding 6):
  // a symlink at --out is refused, its target untouched, and a link at the old `.tmp.<pid>` name is
  // irrelevant.
  ASSERT_TRUE(WriteStringToFile(dir + "/victim", "precious").ok());
  std::filesystem::create_symlink(dir + "/victim", dir + "/link.gguf");
  output.clear();
  EXPECT_EQ(test::RunCommand(cli + "--model " + MiniDir() + " --type q8_0 --out " + dir + "/link.gguf 2>&1", &output), 1);
  EXPECT_TRUE(Contains(output, dir + "/link.gguf: is a symbolic link; only a regular file is replaced")) << output;
  EXPECT_EQ(ReadFileToString(dir + "/victim").value(), "precious");
}

}  // namespace
}  // namespace fgemma
