// Properties over generated input: arbitrary bytes never crash and round-trip, streaming equals full
// decoding, untrusted text never yields control tokens, and the optimized encoder (word cuts, scan
// and heap merging, word cache) equals a naive BPE written from Hugging Face's rules.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "tokenizer_fixture.h"

namespace fgemma::test {
namespace {

const std::string kMarker = "\xE2\x96\x81";  // "▁"

std::string ReplaceMarkers(std::string s) {
  for (size_t p = 0; (p = s.find(kMarker, p)) != std::string::npos;) s.replace(p, kMarker.size(), " ");
  return s;
}

bool IsValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t n = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// Random text mixing raw bytes (NUL, invalid UTF-8, truncated sequences), pieces of added tokens,
// whitespace runs and multilingual characters.
std::string RandomText(std::mt19937& rng, size_t max_parts) {
  static const std::vector<std::string> kPieces = {
      "<start_of_turn>", "<start_of", "<end_of_turn>", "<escape>", "<escape", "<start_function_call>",
      "<start_function_declaration", "<unused1", "<unused10>", "<0x41>", "<bos>", "<eos", "<image_soft_token>",
      "\n", "\n\n\n", "\t\t", "  ", "    ", " ", kMarker, kMarker + kMarker, "> </", "hello", " world", "é", "中文",
      "日本語", "🙂", "👩\u200d👩\u200d👧", "\xE4\xB8", "\xF0\x9F", "\xC3", "\x80", "\xFF", "\xED\xA0\x80", "\xC0\xAF",
      std::string(1, '\0'), "{\"a\": [1, 2]}", "call:get_weather{city:<escape>Paris<escape>}"};
  std::uniform_int_distribution<size_t> parts(0, max_parts), piece(0, kPieces.size() - 1), kind(0, 3), byte(0, 255);
  std::string s;
  for (size_t n = parts(rng); n > 0; --n) {
    if (kind(rng) == 0) {
      s.push_back(static_cast<char>(byte(rng)));
    } else {
      s += kPieces[piece(rng)];
    }
  }
  return s;
}

TEST(TokenizerProperty, ArbitraryBytesRoundTrip) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  std::mt19937 rng(20240601);
  for (int i = 0; i < 3000; ++i) {
    const std::string s = RandomText(rng, 40);
    for (bool parse_special : {true, false}) {
      const auto ids = tok.Encode(s, {.parse_special = parse_special});
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size()) << id;
      auto decoded = tok.Decode(ids);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      // "▁" is how the vocabulary spells a space, so a literal one comes back as a space.
      ASSERT_EQ(*decoded, ReplaceMarkers(s)) << ::testing::PrintToString(s);
    }
  }
}

TEST(TokenizerProperty, UniformRandomBytesRoundTrip) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), len(0, 300);
  for (int i = 0; i < 500; ++i) {
    std::string s(len(rng), '\0');
    for (char& c : s) c = static_cast<char>(byte(rng));
    auto decoded = tok.Decode(tok.Encode(s));
    ASSERT_TRUE(decoded.ok());
    ASSERT_EQ(*decoded, ReplaceMarkers(s));
  }
}

TEST(TokenizerProperty, StreamingEqualsFullDecode) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  std::mt19937 rng(99);
  std::uniform_int_distribution<int32_t> any_id(0, tok.vocab_size() - 1), byte_id(238, 238 + 255), coin(0, 2);
  for (int i = 0; i < 1500; ++i) {
    std::vector<int32_t> ids;
    bool from_text = i % 2 == 0;
    if (from_text) {
      ids = tok.Encode(RandomText(rng, 30));
    } else {
      // Random ids, heavy on byte tokens so characters are split across tokens and left unfinished.
      for (int n = 0; n < 40; ++n) ids.push_back(coin(rng) == 0 ? any_id(rng) : byte_id(rng));
    }
    for (bool skip : {false, true}) {
      StreamDecoder stream(tok, {.skip_special = skip});
      std::string streamed;
      for (int32_t id : ids) {
        auto piece = stream.Push(id);
        ASSERT_TRUE(piece.ok());
        streamed += *piece;
      }
      streamed += stream.Finish();
      auto full = tok.Decode(ids, {.skip_special = skip});
      ASSERT_TRUE(full.ok());
      ASSERT_EQ(streamed, *full);
    }
  }
}

TEST(TokenizerProperty, StreamingEmitsWholeCharacters) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  // Characters absent from the vocabulary arrive as 2-4 byte tokens; no chunk may split them.
  const std::string text = "a\xF0\x9F\xA6\x80 \xE4\xB8\x80\xE4\xB8\x81 𝔘𝔫𝔦 🙂 é 中文 \xF0\x90\x8D\x88";
  StreamDecoder stream(tok);
  std::string all;
  for (int32_t id : tok.Encode(text)) {
    auto piece = stream.Push(id);
    ASSERT_TRUE(piece.ok());
    EXPECT_TRUE(IsValidUtf8(*piece)) << ::testing::PrintToString(*piece);
    all += *piece;
  }
  EXPECT_EQ(stream.Finish(), "");
  EXPECT_EQ(all, text);
  // An unfinished character at the end is flushed raw by Finish.
  StreamDecoder tail(tok);
  auto first = tail.Push(tok.TokenId("<0xE4>"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "");
  EXPECT_EQ(tail.Finish(), "\xE4");
}

// Ids of added tokens that are not whitespace: what untrusted text must never produce.
std::set<int32_t> ControlLikeIds(const Tokenizer& tok) {
  std::set<int32_t> ids;
  for (const Json& added : TokenizerJson()["added_tokens"]) {
    const std::string content = added["content"].get<std::string>();
    if (content.find_first_not_of(" \t\n\r") == std::string::npos) continue;
    if (ReplaceMarkers(content).find_first_not_of(' ') == std::string::npos) continue;
    ids.insert(added["id"].get<int32_t>());
  }
  return ids;
}

TEST(TokenizerProperty, UntrustedTextNeverYieldsControlTokens) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  const std::set<int32_t> forbidden = ControlLikeIds(tok);
  ASSERT_TRUE(forbidden.count(48) && forbidden.count(105) && forbidden.count(52));
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    const std::string s = RandomText(rng, 30);
    for (int32_t id : tok.Encode(s, {.parse_special = false})) ASSERT_EQ(forbidden.count(id), 0u) << id;
  }
  for (const Json& added : TokenizerJson()["added_tokens"]) {
    for (int32_t id : tok.Encode(added["content"].get<std::string>(), {.parse_special = false}))
      ASSERT_EQ(forbidden.count(id), 0u) << added["content"];
  }
}

TEST(TokenizerProperty, AddedTokensLongestMatchAnywhere) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  EXPECT_EQ(tok.Encode("<unused10>"), std::vector<int32_t>{16});
  const auto seven_then_zero = tok.Encode("<unused1>0");
  ASSERT_EQ(seven_then_zero.size(), 2u);
  EXPECT_EQ(seven_then_zero[0], 7);
  EXPECT_EQ(tok.Encode("\n\n\n"), std::vector<int32_t>{109});
  EXPECT_EQ(tok.Encode("x<escape><escape>y"), (std::vector<int32_t>{tok.TokenId("x"), 52, 52, tok.TokenId("y")}));
  EXPECT_EQ(tok.Encode("ab<start_function_call>cd")[1], 48);
  // A partial control token is text.
  for (int32_t id : tok.Encode("<start_function_call")) EXPECT_NE(id, 48);
  // <image_soft_token> (id 262144 in tokenizer.json) has no embedding row: it is encoded as text.
  for (int32_t id : tok.Encode("<image_soft_token>")) EXPECT_LT(id, tok.vocab_size());
  // Untrusted: the same control token becomes text, whitespace runs stay single tokens.
  const auto untrusted = tok.Encode("<start_of_turn>\n\n", {.parse_special = false});
  EXPECT_NE(untrusted.front(), 105);
  EXPECT_EQ(untrusted.back(), 108);
}

// Hugging Face BPE with byte fallback, written as plainly as possible: a whole stretch, no cuts, no
// cache, the lowest-rank (then leftmost) pair merged until none applies.
class NaiveBpe {
 public:
  NaiveBpe() {
    const Json& model = TokenizerJson()["model"];
    for (const auto& [text, id] : model["vocab"].items()) vocab_[text] = id.get<int32_t>();
    int32_t rank = 0;
    for (const Json& m : model["merges"]) ranks_[m[0].get<std::string>() + '\x01' + m[1].get<std::string>()] = rank++;
  }

  std::vector<int32_t> Encode(const std::string& raw) const {
    std::string text;
    for (char c : raw) text += c == ' ' ? kMarker : std::string(1, c);
    std::vector<std::string> symbols;
    for (size_t i = 0; i < text.size();) {
      const auto b = static_cast<uint8_t>(text[i]);
      const size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;  // inputs here are valid UTF-8
      const std::string ch = text.substr(i, n);
      if (vocab_.count(ch)) {
        symbols.push_back(ch);
      } else {
        for (char byte : ch) {
          char name[8];
          std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<uint8_t>(byte));
          symbols.push_back(name);
        }
      }
      i += n;
    }
    for (;;) {
      size_t best = 0;
      int32_t best_rank = INT32_MAX;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        auto it = ranks_.find(symbols[i] + '\x01' + symbols[i + 1]);
        if (it != ranks_.end() && it->second < best_rank) {
          best_rank = it->second;
          best = i;
        }
      }
      if (best_rank == INT32_MAX) break;
      symbols[best] += symbols[best + 1];
      symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    std::vector<int32_t> ids;
    for (const auto& s : symbols) ids.push_back(vocab_.at(s));
    return ids;
  }

 private:
  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<std::string, int32_t> ranks_;
};

TEST(TokenizerProperty, MatchesNaiveBpeOnGeneratedText) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  const NaiveBpe naive;
  // Without special parsing only whitespace added tokens ('\n', '\t', '▁' runs) split the text, and
  // none occur here, so the whole text is one stretch (HTML-like tags such as "</a>" stay text).
  // Long space-free runs exercise the heap path, "> </" the one cut the vocabulary forbids (">▁</").
  static const std::vector<std::string> kPieces = {
      " ", "  ", "   ", "a", "e", "the", "ing", "tion", "> ", ">", "/", "</", "> </", "x", "0", "12", "é", "ü", "中", "文",
      "語", "ا", "ل", "🙂", "𝔘", "\u00A0", "\u200B", "{", "}", ":", "\"", ",", "www.", ".com", "ab", "___", "----",
      "\U0001F9D1\u200D\U0001F680", "ꙮ", "\U00010348"};
  std::mt19937 rng(314159);
  std::uniform_int_distribution<size_t> piece(0, kPieces.size() - 1), len(1, 120);
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (size_t n = len(rng); n > 0; --n) s += kPieces[piece(rng)];
    if (i % 10 == 0) {  // a long word without spaces
      for (size_t n = 0; n < 80; ++n) s += kPieces[3 + piece(rng) % 6];
    }
    ASSERT_EQ(tok.Encode(s, {.parse_special = false}), naive.Encode(s)) << ::testing::PrintToString(s);
  }
}

TEST(TokenizerProperty, ConcurrentEncodingAgrees) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  const auto& rows = GoldenRows();
  std::vector<std::vector<int32_t>> results[2];
  auto work = [&](int t) {
    for (const auto& row : rows) results[t].push_back(tok.Encode(row.text));
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(results[0][i], rows[i].ids);
    ASSERT_EQ(results[1][i], rows[i].ids);
  }
}

TEST(TokenizerProperty, LongInputsStayFast) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  // A megabyte with no space or added token (one BPE run), one of '<' (an added-token prefix at
  // every byte) and one of spaces.
  std::string unbroken;
  for (int i = 0; unbroken.size() < (1 << 20); ++i) unbroken += "qz" + std::to_string(i % 977);
  for (const std::string& s : {unbroken, std::string(1 << 20, '<'), std::string(1 << 20, ' ')}) {
    auto decoded = tok.Decode(tok.Encode(s));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, s);
  }
}

}  // namespace
}  // namespace fgemma::test
