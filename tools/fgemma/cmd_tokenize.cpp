// `fgemma tokenize` and `fgemma detokenize`: the tokenizer from the command line, for checking ids
// against other implementations and for scripting.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "runtime/loaded_model.h"
#include "tokenizer/tokenizer.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  bool bos = false;
  bool no_special = false;
  std::string jsonl;
  std::vector<std::string> text;  // one positional argument; a vector so that an absent one is visible
};

std::string IdsToJson(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

int RunTokenize(const TokenizeOptions& o) {
  if (o.jsonl.empty() == o.text.empty()) return Fail("tokenize: give either TEXT or --jsonl FILE");
  auto tokenizer = LoadTokenizerFor(o.model);
  if (!tokenizer.ok()) return Fail(tokenizer.status().ToString());
  const EncodeOptions options{.add_bos = o.bos, .parse_special = !o.no_special};
  if (o.jsonl.empty()) {
    std::printf("%s\n", IdsToJson(tokenizer->Encode(o.text[0], options)).c_str());
    return 0;
  }
  std::ifstream file;
  if (o.jsonl != "-") {
    // A pipe (`--jsonl <(cmd)`) streams line by line like standard input; a directory would
    // "open" and read as empty.
    if (IsDirectory(o.jsonl)) return Fail(o.jsonl + ": is a directory, not a JSONL file");
    file.open(o.jsonl, std::ios::binary);
    if (!file) return Fail(o.jsonl + ": cannot open for reading");
  }
  std::istream& in = o.jsonl == "-" ? std::cin : file;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    const std::string where = o.jsonl + ":" + std::to_string(number);
    auto j = ParseJson(line, where);
    if (!j.ok()) return Fail(j.status().ToString());
    if (!j->is_string()) return Fail(where + ": expected a JSON string, found " + std::string(j->type_name()));
    std::printf("%s\n", IdsToJson(tokenizer->Encode(j->get<std::string>(), options)).c_str());
  }
  if (in.bad()) return Fail(o.jsonl + ": read error");
  return 0;
}

const CommandRegistration kTokenize(30, [](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand("tokenize", "Print the token ids of TEXT as a JSON array");
  cmd->add_option("--model", o->model, "Model directory, or a tokenizer.json")->required();
  cmd->add_flag("--bos", o->bos, "Prepend <bos>");
  cmd->add_flag("--no-special", o->no_special,
                "Encode added tokens in the text (<start_of_turn>, <escape>, ...) as plain text");
  cmd->add_option("--jsonl", o->jsonl, "Read one JSON string per line ('-': stdin); print one JSON array per line");
  cmd->add_option("text", o->text, "Text to encode")->expected(0, 1);
  return [o] { return RunTokenize(*o); };
});

struct DetokenizeOptions {
  std::string model;
  bool skip_special = false;
  std::vector<std::string> ids;
};

// Ids may be given as separate arguments or as one list ("[2, 105]", "2,105").
bool ParseIds(const std::vector<std::string>& args, std::vector<int32_t>& ids, std::string& bad) {
  for (const std::string& arg : args) {
    std::string token;
    auto flush = [&]() -> bool {
      if (token.empty()) return true;
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(token, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != token.size() || v < INT32_MIN || v > INT32_MAX) {
        bad = token;
        return false;
      }
      ids.push_back(static_cast<int32_t>(v));
      token.clear();
      return true;
    };
    for (char c : arg) {
      if (c == '[' || c == ']' || c == ',' || c == ' ' || c == '\t' || c == '\n') {
        if (!flush()) return false;
      } else {
        token.push_back(c);
      }
    }
    if (!flush()) return false;
  }
  return true;
}

int RunDetokenize(const DetokenizeOptions& o) {
  std::vector<int32_t> ids;
  std::string bad;
  if (!ParseIds(o.ids, ids, bad)) return Fail("detokenize: not a token id: '" + bad + "'");
  auto tokenizer = LoadTokenizerFor(o.model);
  if (!tokenizer.ok()) return Fail(tokenizer.status().ToString());
  auto text = tokenizer->Decode(ids, {.skip_special = o.skip_special});
  if (!text.ok()) return Fail(text.status().ToString());
  std::fwrite(text->data(), 1, text->size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

const CommandRegistration kDetokenize(31, [](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<DetokenizeOptions>();
  auto* cmd = app.add_subcommand("detokenize", "Print the text of token IDS (followed by a newline)");
  cmd->add_option("--model", o->model, "Model directory, or a tokenizer.json")->required();
  cmd->add_flag("--skip-special", o->skip_special, "Leave out special tokens (<bos>, <end_of_turn>, ...)");
  cmd->add_option("ids", o->ids, "Token ids: separate arguments, or a list like [2,105]")->required();
  return [o] { return RunDetokenize(*o); };
});

}  // namespace
}  // namespace fgemma::cli
