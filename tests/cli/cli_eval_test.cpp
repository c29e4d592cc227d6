// `fgemma eval` end to end: the JSON report and the --out rows have their fields, the text report
// its table, and bad input gives an error naming the line and field (exit 1), never a crash.
#include <gtest/gtest.h>

#include <set>

#include "test_support.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

std::string EvalCommand(const std::string& args) {
  return test::CliPath() + " eval --model " + test::FixturePath("models/mini-bf16") + " --threads 2 " + args;
}

std::string Sample() { return test::FixturePath("eval/phone-actions.jsonl"); }

std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out.push_back(Json::parse(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return out;
}


// The fields docs/eval.md (the user guide of `fgemma eval`) documents: the first cell of each table row, as
// `path` tokens, each optionally followed by a `{a, b}` token naming its members.
std::set<std::string> DocumentedFields(bool rows_table) {
  const std::string readme = ReadFileToString(std::string(FGEMMA_SOURCE_DIR) + "/docs/eval.md").value();
  const size_t begin = readme.find("# Evaluating: `fgemma eval`");
  const size_t end = readme.find("\n# ", begin + 1);
  EXPECT_NE(begin, std::string::npos);
  std::string section = readme.substr(begin, end - begin);
  const size_t split = section.find("`--out ROWS.jsonl` writes");
  EXPECT_NE(split, std::string::npos);
  section = rows_table ? section.substr(split) : section.substr(0, split);
  std::set<std::string> out;
  size_t pos = 0;
  while ((pos = section.find("\n| `", pos)) != std::string::npos) {
    const size_t cell_end = section.find(" |", pos + 3);
    const std::string cell = section.substr(pos + 3, cell_end - pos - 3);
    pos = cell_end;
    std::string last;
    for (size_t t = cell.find('`'); t != std::string::npos; t = cell.find('`', t)) {
      const size_t close = cell.find('`', t + 1);
      const std::string token = cell.substr(t + 1, close - t - 1);
      t = close + 1;
      if (token.front() != '{') {
        out.insert(last = token);
        continue;
      }
      std::string member;
      for (char c : token.substr(1)) {
        if (c == ',' || c == '}') {
          out.insert(last + "." + member);
          member.clear();
        } else if (c != ' ') {
          member += c;
        }
      }
    }
  }
  return out;
}

bool HasChildren(const std::set<std::string>& documented, const std::string& path) {
  for (const auto& d : documented) {
    if (d.rfind(path + ".", 0) == 0) return true;
  }
  return false;
}

// Paths present in `j`: members, and `name[]` for arrays of objects (their members under it),
// descending only where the documentation lists members.
void ActualFields(const Json& j, const std::string& prefix, const std::set<std::string>& documented, std::set<std::string>* out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    out->insert(path);
    if (it->is_object() && HasChildren(documented, path)) ActualFields(*it, path, documented, out);
    if (it->is_array() && !it->empty() && it->front().is_object()) {
      out->insert(path + "[]");
      if (HasChildren(documented, path + "[]")) ActualFields(it->front(), path + "[]", documented, out);
    }
  }
}

// Every documented field is present, and every field present is documented.
void ExpectDocumented(const Json& j, bool rows_table) {
  const std::set<std::string> documented = DocumentedFields(rows_table);
  ASSERT_GT(documented.size(), 10u);
  std::set<std::string> actual;
  ActualFields(j, "", documented, &actual);
  // `adapter` is documented as present only with --lora.
  for (const auto& d : documented) EXPECT_TRUE(actual.count(d) || d == "adapter") << "documented but missing: " << d;
  for (const auto& a : actual) {
    // An array documented as `name[]` or as `name` (its elements then not described field by field).
    const bool array_elements = a.size() > 2 && a.ends_with("[]") && documented.count(a.substr(0, a.size() - 2));
    const bool ok = documented.count(a) || documented.count(a + "[]") || array_elements;
    EXPECT_TRUE(ok) << "present but not documented: " << a;
  }
}

TEST(CliEval, JsonReportAndRows) {
  const std::string out_path = test::TempDir() + "/rows.jsonl";
  std::string out;
  // stderr joins stdout: with no terminal there is no progress bar, so the whole output is the report.
  ASSERT_EQ(test::RunCommand(EvalCommand("--data " + Sample() + " --limit 6 --tool-choice required --json --out " + out_path + " 2>&1"), &out), 0)
      << out;
  const Json j = Json::parse(out);
  EXPECT_EQ(j["rows"], 6);
  EXPECT_EQ(j["split"], "eval");
  EXPECT_EQ(j["tool_choice"], "required");
  EXPECT_EQ(j["constrained"], true);
  EXPECT_EQ(j["call_rows"].get<int>() + j["no_call_rows"].get<int>(), 6);
  EXPECT_EQ(j["invalid"]["count"], 0);
  EXPECT_EQ(j["exact_match"]["total"], 6);
  for (const char* k : {"p50", "p95", "mean", "max"}) EXPECT_TRUE(j["latency_ms"][k].is_number()) << k;
  EXPECT_GT(j["rows_per_s"].get<double>(), 0);
  EXPECT_GE(j["catalogs"]["built"].get<int>(), 1);
  ASSERT_TRUE(j["functions"].is_array());
  ASSERT_FALSE(j["functions"].empty());
  int generated = 0;
  for (const auto& f : j["functions"]) generated += f["generated"].get<int>();
  EXPECT_GE(generated, 6);  // required: every row called at least once
  ASSERT_FALSE(j["latency_warm_ms"].is_null());  // rows sharing a tool list restored its state
  EXPECT_LE(j["decoding"]["accepted_tokens"].get<size_t>(), j["decoding"]["drafted_tokens"].get<size_t>());
  ExpectDocumented(j, false);

  const std::vector<Json> rows = JsonLines(ReadFileToString(out_path).value());
  ASSERT_EQ(rows.size(), 6u);
  size_t previous = 0, row_passes = 0;
  for (const auto& r : rows) {
    EXPECT_GT(r["line"].get<size_t>(), previous);  // file order
    previous = r["line"].get<size_t>();
    EXPECT_EQ(r["split"], "eval");
    EXPECT_FALSE(r["got"]["calls"].empty());
    EXPECT_EQ(r["valid"], true);
    EXPECT_TRUE(r["latency_ms"].is_number());
    EXPECT_TRUE(r["expected"]["calls"].is_array());
    EXPECT_GE(r["passes"].get<size_t>(), 1u);  // the turn's prefill at least
    row_passes += r["passes"].get<size_t>();
    ExpectDocumented(r, true);
  }
  EXPECT_EQ(row_passes, j["decoding"]["passes"].get<size_t>());
  EXPECT_EQ(j["decoding"]["passes_per_row"].get<double>(), static_cast<double>(row_passes) / 6);
}

// --cache-dir: a second eval of the same rows restores every catalog from its file instead of
// prefilling it, and answers the same; a path that is not a directory is refused before any row.
// The first 4 rows of the eval split come with 2 tool lists.
TEST(CliEval, CacheDirRestoresEachCatalogWithTheSameAnswers) {
  const std::string dir = test::TempDir(), cache = dir + "/catalogs";
  auto run = [&](const std::string& out_path, std::string* out) {
    return test::RunCommand(EvalCommand("--data " + Sample() + " --limit 4 --json --cache-dir " + cache + " --out " +
                                        out_path + " 2>/dev/null"),
                            out);
  };
  std::string first, second;
  ASSERT_EQ(run(dir + "/first.jsonl", &first), 0) << first;
  ASSERT_EQ(run(dir + "/second.jsonl", &second), 0) << second;
  const Json a = Json::parse(first), b = Json::parse(second);
  ASSERT_GE(a["catalogs"]["built"].get<int>(), 2);  // rows of more than one tool list
  EXPECT_EQ(a["catalogs"]["restored"], 0);
  EXPECT_EQ(b["catalogs"]["built"], 0);
  EXPECT_EQ(b["catalogs"]["restored"], a["catalogs"]["built"]);
  const std::vector<Json> rows_a = JsonLines(ReadFileToString(dir + "/first.jsonl").value());
  const std::vector<Json> rows_b = JsonLines(ReadFileToString(dir + "/second.jsonl").value());
  ASSERT_EQ(rows_a.size(), rows_b.size());
  for (size_t i = 0; i < rows_a.size(); ++i) EXPECT_EQ(rows_a[i]["got"], rows_b[i]["got"]) << "row " << i;
  std::string refused;
  EXPECT_EQ(test::RunCommand(EvalCommand("--data " + Sample() + " --limit 1 --cache-dir " + dir + "/first.jsonl 2>&1"),
                             &refused),
            1);
  EXPECT_NE(refused.find("catalog cache directory"), std::string::npos) << refused;
}

// --lora evaluates the fine-tune as the app runs it (the adapter over the base): the report names
// the adapter, its outputs are the adapter's (they differ from the base's on this model), and a
// bad adapter is refused before any row runs.
TEST(CliEval, LoraAdapterIsEvaluatedAndNamed) {
  const std::string dir = test::TempDir();
  const std::string adapter = test::FixturePath("lora/mini-lora-s14");
  std::string base_out, lora_out, out;
  ASSERT_EQ(test::RunCommand(EvalCommand("--data " + Sample() + " --limit 4 --tool-choice required --json --out " + dir +
                                         "/base.jsonl 2>&1"),
                             &base_out),
            0)
      << base_out;
  ASSERT_EQ(test::RunCommand(EvalCommand("--data " + Sample() + " --limit 4 --tool-choice required --json --lora " +
                                         adapter + " --out " + dir + "/lora.jsonl 2>&1"),
                             &lora_out),
            0)
      << lora_out;
  const Json j = Json::parse(lora_out);
  EXPECT_EQ(j["adapter"], adapter);
  EXPECT_FALSE(Json::parse(base_out).contains("adapter"));
  ExpectDocumented(j, false);
  EXPECT_NE(ReadFileToString(dir + "/base.jsonl").value(), ReadFileToString(dir + "/lora.jsonl").value())
      << "the adapter changes this model's outputs";
  EXPECT_EQ(test::RunCommand(EvalCommand("--data " + Sample() + " --lora " + dir + "/nowhere 2>&1"), &out), 1);
  EXPECT_NE(out.find("nowhere"), std::string::npos) << out;
}

TEST(CliEval, TextReportHasTheFiguresAndTheTable) {
  std::string out;
  ASSERT_EQ(test::RunCommand(EvalCommand("--data " + Sample() + " --limit 3 --tool-choice required"), &out), 0) << out;
  for (const char* want : {"3 rows", "exact match", "function name", "arguments", "no-call accuracy", "invalid outputs",
                           "latency per row", "rows/s", "function ", "expected", "generated"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " in:\n" << out;
}

TEST(CliEval, BadInputNamesLineAndField) {
  const std::string dir = test::TempDir();
  const std::string first_line = ReadFileToString(Sample()).value().substr(0, ReadFileToString(Sample()).value().find('\n') + 1);
  ASSERT_TRUE(WriteStringToFile(dir + "/bad.jsonl", first_line + R"({"metadata":"eval","tools":[],"messages":"hi"})" + "\n").ok());
  ASSERT_TRUE(WriteStringToFile(dir + "/good.jsonl", first_line).ok());
  struct Case {
    std::string args, want;
  };
  const std::vector<Case> cases = {
      {"--data " + dir + "/bad.jsonl", "bad.jsonl:2: messages: must be an array, got string"},
      {"--data " + dir + "/good.jsonl --split dev", "unknown split 'dev'"},
      {"--data " + dir + "/good.jsonl --split train", "none of its 1 rows has metadata \"train\""},
      {"--data " + dir + "/absent.jsonl", "absent.jsonl"},
      {"--data " + dir + "/good.jsonl --out " + dir, "--out"},  // a directory is never replaced
      {"--data " + dir + "/good.jsonl --tool-choice none", "--tool-choice"},
  };
  for (const auto& c : cases) {
    std::string out;
    const int rc = test::RunCommand(EvalCommand(c.args + " 2>&1"), &out);
    EXPECT_GT(rc, 0) << c.args;
    EXPECT_LT(rc, 128) << c.args;  // an error exit, not a signal
    EXPECT_NE(out.find(c.want), std::string::npos) << "want '" << c.want << "' in: " << out;
  }
}

}  // namespace
}  // namespace fgemma
