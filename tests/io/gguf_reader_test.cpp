// Reading the mini-*.gguf fixtures (written by llama.cpp's gguf-py): metadata, tokenizer, tensor list,
// block decoding against gguf-py's own dequantization, and agreement with the safetensors checkpoint.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <map>
#include <set>

#include "io/gguf.h"
#include "io_test_util.h"
#include "util/float_types.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

using test::Contains;
using test::OpenMiniGguf;

struct FileCase {
  const char* type;         // fixture suffix
  uint32_t weight_type;     // ggml type of the 2-D weights
  uint32_t file_type;       // general.file_type (llama_ftype)
};
constexpr FileCase kFiles[] = {
    {"bf16", ggml_type::kBF16, 32},
    {"q8_0", ggml_type::kQ8_0, 7},
    {"q4_0", ggml_type::kQ4_0, 2},
};

TEST(GgufReader, MiniMetadata) {
  for (const FileCase& c : kFiles) {
    SCOPED_TRACE(c.type);
    GgufFile f = OpenMiniGguf(c.type);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.data_offset() % 32, 0u);
    EXPECT_EQ(f.metadata().size(), 26u);
    EXPECT_EQ(*f.Architecture(), "gemma3");
    EXPECT_EQ(*f.GetString("general.name"), "synthetic gemma3");
    EXPECT_EQ(*f.GetU32("general.file_type"), c.file_type);
    EXPECT_EQ(*f.GetU32("gemma3.context_length"), 32768u);
    EXPECT_EQ(*f.GetU32("gemma3.embedding_length"), 64u);
    EXPECT_EQ(*f.GetU32("gemma3.block_count"), 8u);
    EXPECT_EQ(*f.GetU32("gemma3.feed_forward_length"), 128u);
    EXPECT_EQ(*f.GetU32("gemma3.attention.head_count"), 4u);
    EXPECT_EQ(*f.GetU32("gemma3.attention.head_count_kv"), 1u);
    EXPECT_EQ(*f.GetU32("gemma3.attention.key_length"), 32u);
    EXPECT_EQ(*f.GetU32("gemma3.attention.value_length"), 32u);
    EXPECT_EQ(*f.GetU32("gemma3.attention.sliding_window"), 16u);
    EXPECT_EQ(*f.GetF32("gemma3.attention.layer_norm_rms_epsilon"), 1e-6f);
    EXPECT_EQ(*f.GetF32("gemma3.rope.freq_base"), 1e6f);
    EXPECT_EQ(f.Find("gemma3.attention.layer_norm_rms_epsilon")->type, GgufType::kFloat32);
    EXPECT_EQ(f.Find("gemma3.block_count")->type, GgufType::kUint32);
    // Not in these files: rope scaling, chat template, merges, general.alignment.
    EXPECT_FALSE(f.Has("gemma3.rope.scaling.type"));
    EXPECT_FALSE(f.Has("tokenizer.chat_template"));
    EXPECT_FALSE(f.Has("tokenizer.ggml.merges"));
    EXPECT_FALSE(f.Has("general.alignment"));
  }
}

TEST(GgufReader, MiniTokenizer) {
  GgufFile f = OpenMiniGguf("q8_0");
  auto tok = f.ReadTokenizer();
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(tok->model, "llama");
  EXPECT_EQ(tok->pre, "default");
  ASSERT_EQ(tok->tokens.size(), 262144u);
  ASSERT_EQ(tok->scores.size(), 262144u);
  ASSERT_EQ(tok->token_types.size(), 262144u);
  EXPECT_TRUE(tok->merges.empty());
  EXPECT_TRUE(tok->chat_template.empty());
  EXPECT_EQ(tok->tokens[0], "<pad>");
  EXPECT_EQ(tok->tokens[1], "<eos>");
  EXPECT_EQ(tok->tokens[2], "<bos>");
  EXPECT_EQ(tok->tokens[3], "<unk>");
  EXPECT_EQ(tok->tokens[46], "<start_function_declaration>");
  EXPECT_EQ(tok->tokens[52], "<escape>");
  EXPECT_EQ(tok->scores[0], 0.0f);
  EXPECT_EQ(tok->scores[1000], -1000.0f);
  std::map<int32_t, int> type_counts;
  for (int32_t t : tok->token_types) ++type_counts[t];
  // normal 1, control 3, user-defined 4, byte 6
  EXPECT_EQ(type_counts, (std::map<int32_t, int>{{1, 255474}, {3, 8}, {4, 6406}, {6, 256}}));
  EXPECT_EQ(tok->token_types[2], 3);
  EXPECT_EQ(tok->token_types[46], 4);
  EXPECT_EQ(tok->bos_id, 2);
  EXPECT_EQ(tok->eos_id, 1);
  EXPECT_EQ(tok->unk_id, 3);
  EXPECT_EQ(tok->pad_id, 0);
  EXPECT_EQ(tok->sep_id, -1);
  EXPECT_EQ(tok->add_bos, std::optional<bool>(true));
  EXPECT_EQ(tok->add_eos, std::optional<bool>(false));
  EXPECT_EQ(tok->add_space_prefix, std::optional<bool>(false));
  // The same values through the plain getters.
  EXPECT_EQ(f.GetStringArray("tokenizer.ggml.tokens")->at(106), tok->tokens[106]);
  EXPECT_EQ(*f.GetBool("tokenizer.ggml.add_bos_token"), true);
}

TEST(GgufReader, MiniTensorList) {
  for (const FileCase& c : kFiles) {
    SCOPED_TRACE(c.type);
    GgufFile f = OpenMiniGguf(c.type);
    // Expected names in file order and shapes in ggml order.
    std::vector<std::pair<std::string, std::vector<uint64_t>>> expected = {
        {"token_embd.weight", {64, 262144}}, {"output_norm.weight", {64}}};
    const std::map<std::string, std::vector<uint64_t>> layer_shapes = {
        {"attn_q", {64, 128}},  {"attn_k", {64, 32}},      {"attn_v", {64, 32}},
        {"attn_output", {128, 64}}, {"attn_q_norm", {32}}, {"attn_k_norm", {32}},
        {"attn_norm", {64}},    {"post_attention_norm", {64}}, {"ffn_norm", {64}},
        {"post_ffw_norm", {64}}, {"ffn_gate", {64, 128}}, {"ffn_up", {64, 128}},
        {"ffn_down", {128, 64}}};
    for (int layer = 0; layer < 8; ++layer) {
      for (const auto& n : test::kGemma3LayerTensors) {
        expected.push_back({"blk." + std::to_string(layer) + "." + n.gguf + ".weight", layer_shapes.at(n.gguf)});
      }
    }
    ASSERT_EQ(f.tensors().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const GgufTensorInfo& t = f.tensors()[i];
      SCOPED_TRACE(expected[i].first);
      EXPECT_EQ(t.name, expected[i].first);
      ASSERT_EQ(t.n_dims, expected[i].second.size());
      for (uint32_t d = 0; d < t.n_dims; ++d) EXPECT_EQ(t.ne[d], expected[i].second[d]);
      const bool is_norm = t.n_dims == 1;
      EXPECT_EQ(t.ggml_type, is_norm ? ggml_type::kF32 : c.weight_type);
      auto view = f.GetTensorView(t.name);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      EXPECT_EQ(view->cols, t.ne[0]);
      EXPECT_EQ(view->rows, t.rows());
      EXPECT_EQ(view->bytes(), t.n_bytes);
      EXPECT_EQ(static_cast<const uint8_t*>(view->data), f.TensorData(t));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(view->data) % 32, 0u);
      EXPECT_EQ(f.FindTensor(t.name), &t);
    }
    EXPECT_EQ(f.FindTensor("nope"), nullptr);
    EXPECT_EQ(f.GetTensorView("nope").status().code(), ErrorCode::kNotFound);
  }
}

TEST(GgufReader, DequantizedRowsMatchGgufPy) {
  for (const FileCase& c : kFiles) {
    SCOPED_TRACE(c.type);
    GgufFile f = OpenMiniGguf(c.type);
    const Json golden = test::LoadGolden(std::string("mini-") + c.type + ".dequant.json");
    ASSERT_TRUE(golden.contains("tensors"));
    int rows_checked = 0;
    for (const auto& [name, entry] : golden["tensors"].items()) {
      SCOPED_TRACE(name);
      const GgufTensorInfo* t = f.FindTensor(name);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(entry["type"].get<std::string>(), GgmlTypeName(t->ggml_type));
      const auto shape = entry["shape_gguf"].get<std::vector<uint64_t>>();
      ASSERT_EQ(shape.size(), t->n_dims);
      for (size_t d = 0; d < shape.size(); ++d) EXPECT_EQ(shape[d], t->ne[d]);
      auto view = f.GetTensorView(*t);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      for (const auto& [row_key, values] : entry["rows"].items()) {
        const size_t r = std::stoul(row_key);
        ASSERT_LT(r, view->rows);
        const std::vector<float> row = test::RowAsFloats(*view, r);
        ASSERT_EQ(values.size(), row.size());
        for (size_t i = 0; i < row.size(); ++i) {
          const float want = static_cast<float>(values[i].get<double>());  // exact: the JSON holds float32 values
          ASSERT_EQ(std::bit_cast<uint32_t>(row[i]), std::bit_cast<uint32_t>(want))
              << "row " << r << " element " << i << ": " << row[i] << " vs " << want;
        }
        ++rows_checked;
      }
    }
    EXPECT_EQ(rows_checked, 12);
  }
}

// The bf16 GGUF holds the safetensors checkpoint's bytes for every 2-D weight and 1 + w (in float32)
// for every norm: this pins down the name mapping the model loader relies on.
TEST(GgufReader, Bf16FileMatchesSafetensors) {
  auto st = MappedFile::Open(test::FixturePath("models/mini-bf16/model.safetensors"));
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  uint64_t header_len = 0;
  std::memcpy(&header_len, st->data(), 8);
  auto header = ParseJson(std::string_view(reinterpret_cast<const char*>(st->data()) + 8, header_len), "safetensors");
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  const uint8_t* st_data = st->data() + 8 + header_len;

  GgufFile f = OpenMiniGguf("bf16");
  std::map<std::string, std::string> hf_name = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                {"output_norm.weight", "model.norm.weight"}};
  for (int layer = 0; layer < 8; ++layer) {
    for (const auto& n : test::kGemma3LayerTensors) {
      hf_name["blk." + std::to_string(layer) + "." + n.gguf + ".weight"] =
          "model.layers." + std::to_string(layer) + "." + n.hf + ".weight";
    }
  }
  ASSERT_EQ(hf_name.size(), f.tensors().size());
  for (const GgufTensorInfo& t : f.tensors()) {
    SCOPED_TRACE(std::string(t.name));
    const Json& e = (*header)[hf_name.at(std::string(t.name))];
    ASSERT_EQ(e["dtype"], "BF16");
    const auto offsets = e["data_offsets"].get<std::vector<uint64_t>>();
    const uint8_t* src = st_data + offsets[0];
    const uint64_t n = (offsets[1] - offsets[0]) / 2;
    ASSERT_EQ(n, t.n_elements);
    // Hugging Face [out, in] row-major is ggml's ne = {in, out}.
    const auto shape = e["shape"].get<std::vector<uint64_t>>();
    for (size_t d = 0; d < shape.size(); ++d) EXPECT_EQ(shape[shape.size() - 1 - d], t.ne[d]);
    if (t.n_dims == 2) {
      ASSERT_EQ(t.ggml_type, ggml_type::kBF16);
      EXPECT_EQ(std::memcmp(src, f.TensorData(t), t.n_bytes), 0);
    } else {
      ASSERT_EQ(t.ggml_type, ggml_type::kF32);
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t w;
        float stored;
        std::memcpy(&w, src + 2 * i, 2);
        std::memcpy(&stored, f.TensorData(t) + 4 * i, 4);
        ASSERT_EQ(stored, 1.0f + Bf16ToF32(w)) << i;
      }
    }
  }
}

TEST(GgufReader, NormsAreIdenticalAcrossFiles) {
  GgufFile files[] = {OpenMiniGguf("bf16"), OpenMiniGguf("q8_0"), OpenMiniGguf("q4_0")};
  int checked = 0;
  for (const GgufTensorInfo& t : files[0].tensors()) {
    if (t.ggml_type != ggml_type::kF32) continue;
    for (int k = 1; k < 3; ++k) {
      const GgufTensorInfo* o = files[k].FindTensor(t.name);
      ASSERT_NE(o, nullptr);
      ASSERT_EQ(o->n_bytes, t.n_bytes);
      EXPECT_EQ(std::memcmp(files[0].TensorData(t), files[k].TensorData(*o), t.n_bytes), 0) << t.name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 49);
}

TEST(GgufReader, TypedGetterErrors) {
  GgufFile f = OpenMiniGguf("q4_0");
  auto missing = f.GetU32("gemma3.nope");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), "'gemma3.nope' is missing")) << missing.status().ToString();
  EXPECT_TRUE(Contains(missing.status().message(), "mini-q4_0.gguf"));

  auto wrong = f.GetU32("general.name");
  EXPECT_FALSE(wrong.ok());
  EXPECT_TRUE(Contains(wrong.status().message(), "wrong type: string, expected an integer (u32)"))
      << wrong.status().ToString();
  auto wrong_float = f.GetF32("gemma3.block_count");
  EXPECT_TRUE(Contains(wrong_float.status().message(), "wrong type: u32, expected a float")) << wrong_float.status().ToString();
  auto wrong_array = f.GetI32Array("tokenizer.ggml.tokens");
  EXPECT_TRUE(Contains(wrong_array.status().message(), "wrong type: array of string")) << wrong_array.status().ToString();
  auto wrong_strings = f.GetStringArray("tokenizer.ggml.scores");
  EXPECT_TRUE(Contains(wrong_strings.status().message(), "array of f32, expected array of string"));
  EXPECT_FALSE(f.GetBool("gemma3.block_count").ok());
  EXPECT_FALSE(f.GetString("tokenizer.ggml.tokens").ok());

  // Integer getters convert between integer types when the value fits.
  EXPECT_EQ(*f.GetU64("gemma3.block_count"), 8u);
  EXPECT_EQ(*f.GetI32("gemma3.block_count"), 8);
  EXPECT_EQ(*f.GetI64("gemma3.block_count"), 8);
  EXPECT_EQ(*f.GetF64("gemma3.rope.freq_base"), 1e6);
  EXPECT_EQ(f.GetU32Array("tokenizer.ggml.token_type")->at(46), 4u);
}

TEST(GgufReader, OpenErrors) {
  auto missing = GgufFile::Open(test::FixturePath("models/does-not-exist.gguf"));
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  auto dir = GgufFile::Open(test::FixturePath("models"));
  EXPECT_FALSE(dir.ok());
  auto not_gguf = GgufFile::Open(test::FixturePath("models/mini-bf16/config.json"));
  EXPECT_EQ(not_gguf.status().code(), ErrorCode::kCorruptFile);
  EXPECT_TRUE(Contains(not_gguf.status().message(), "config.json: magic at offset 0")) << not_gguf.status().ToString();
}

}  // namespace
}  // namespace fgemma
