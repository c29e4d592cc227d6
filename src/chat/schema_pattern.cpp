#include "chat/schema_pattern.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cctype>
#include <deque>
#include <map>

#include "chat/py_text.h"

namespace fgemma {
namespace {

constexpr int kMaxRepeat = 100;
constexpr size_t kMaxNfaStates = 20000;

// The parsed expression: a byte set (with `multibyte`: also any UTF-8 character past ASCII), a
// sequence, a choice, or a repetition of its one child.
struct Re {
  enum class Kind { kSet, kConcat, kAlt, kRepeat } kind = Kind::kConcat;
  std::bitset<256> set;
  bool multibyte = false;
  std::vector<Re> kids;
  int min = 0, max = -1;  // kRepeat; max -1: unbounded
};

Re Set(std::bitset<256> set, bool multibyte) {
  Re r;
  r.kind = Re::Kind::kSet;
  r.set = set;
  r.multibyte = multibyte;
  return r;
}

std::bitset<256> Range(int lo, int hi) {
  std::bitset<256> s;
  for (int c = lo; c <= hi; ++c) s.set(static_cast<size_t>(c));
  return s;
}

std::bitset<256> Ascii() { return Range(0, 0x7F); }

Re Literal(std::string_view bytes) {
  if (bytes.size() == 1) return Set(Range(static_cast<uint8_t>(bytes[0]), static_cast<uint8_t>(bytes[0])), false);
  Re seq;
  for (char c : bytes) seq.kids.push_back(Set(Range(static_cast<uint8_t>(c), static_cast<uint8_t>(c)), false));
  return seq;
}

class Parser {
 public:
  Parser(std::string_view p, const std::string& path) : p_(p), path_(path) {}

  Result<Re> Whole(bool anchored) {
    FGEMMA_TRY(Re re, Alt(0));
    if (i_ < p_.size()) return Error("unmatched ')'");
    if (anchored && re.kind == Re::Kind::kAlt)
      return Error("^ or $ beside a top-level '|' is ambiguous here; group the alternatives: ^(a|b)$");
    return re;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument(path_ + ": " + what + " (at offset " + std::to_string(i_) + " of the pattern; see docs/tool-schemas.md)");
  }
  bool More() const { return i_ < p_.size(); }
  char Peek() const { return p_[i_]; }

  Result<Re> Alt(int depth) {
    if (depth > 32) return Error("groups nested deeper than 32");
    Re alt;
    alt.kind = Re::Kind::kAlt;
    while (true) {
      FGEMMA_TRY(Re branch, Concat(depth));
      alt.kids.push_back(std::move(branch));
      if (!More() || Peek() != '|') break;
      ++i_;
    }
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Result<Re> Concat(int depth) {
    Re seq;
    while (More() && Peek() != '|' && Peek() != ')') {
      FGEMMA_TRY(Re item, Repeat(depth));
      seq.kids.push_back(std::move(item));
    }
    return seq;
  }

  Result<int> Count() {
    int n = 0;
    const size_t start = i_;
    while (More() && Peek() >= '0' && Peek() <= '9') {
      n = n * 10 + (Peek() - '0');
      if (n > kMaxRepeat) return Error("repetition bound above " + std::to_string(kMaxRepeat));
      ++i_;
    }
    if (i_ == start) return Error("malformed {n,m} repetition");
    return n;
  }

  Result<Re> Repeat(int depth) {
    FGEMMA_TRY(Re atom, Atom(depth));
    while (More()) {
      int lo = 0, hi = -1;
      const char c = Peek();
      if (c == '*') {
        ++i_;
      } else if (c == '+') {
        lo = 1;
        ++i_;
      } else if (c == '?') {
        hi = 1;
        ++i_;
      } else if (c == '{') {
        ++i_;
        FGEMMA_TRY(lo, Count());
        hi = lo;
        if (More() && Peek() == ',') {
          ++i_;
          hi = -1;
          if (More() && Peek() != '}') {
            FGEMMA_TRY(hi, Count());
          }
        }
        if (!More() || Peek() != '}') return Error("malformed {n,m} repetition");
        ++i_;
        if (hi >= 0 && hi < lo) return Error("repetition {n,m} with m < n");
      } else {
        break;
      }
      if (More() && Peek() == '?') ++i_;  // lazy: the same strings match as a whole
      Re rep;
      rep.kind = Re::Kind::kRepeat;
      rep.min = lo;
      rep.max = hi;
      rep.kids.push_back(std::move(atom));
      atom = std::move(rep);
    }
    return atom;
  }

  // One escape after '\'; `in_class` refuses what a class cannot hold. Appends to `set`/`multibyte`
  // for class escapes, or returns the literal's bytes in `literal`.
  Status Escape(bool in_class, std::bitset<256>* set, bool* multibyte, std::string* literal) {
    if (!More()) return Error("pattern ends after '\\'");
    const char c = p_[i_++];
    const std::bitset<256> digit = Range('0', '9');
    const std::bitset<256> word = Range('0', '9') | Range('A', 'Z') | Range('a', 'z') | Range('_', '_');
    std::bitset<256> space;
    for (char s : {' ', '\t', '\n', '\r', '\f', '\v'}) space.set(static_cast<uint8_t>(s));
    switch (c) {
      case 'd': *set |= digit; return Status::Ok();
      case 'w': *set |= word; return Status::Ok();
      case 's': *set |= space; return Status::Ok();
      case 'D': *set |= Ascii() & ~digit; *multibyte = true; return Status::Ok();
      case 'W': *set |= Ascii() & ~word; *multibyte = true; return Status::Ok();
      case 'S': *set |= Ascii() & ~space; *multibyte = true; return Status::Ok();
      case 'n': literal->push_back('\n'); return Status::Ok();
      case 'r': literal->push_back('\r'); return Status::Ok();
      case 't': literal->push_back('\t'); return Status::Ok();
      case 'f': literal->push_back('\f'); return Status::Ok();
      case 'v': literal->push_back('\v'); return Status::Ok();
      case 'x':
      case 'u': {
        const size_t digits = c == 'x' ? 2 : 4;
        uint32_t cp = 0;
        for (size_t k = 0; k < digits; ++k, ++i_) {
          if (!More() || !std::isxdigit(static_cast<unsigned char>(Peek()))) return Error(std::string("malformed \\") + c + " escape");
          const char h = Peek();
          cp = cp * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) return Error("\\u escape of a surrogate");
        if (in_class && cp >= 0x80) return Error("non-ASCII characters in a [...] class are not supported");
        py::AppendUtf8(static_cast<char32_t>(cp), literal);
        return Status::Ok();
      }
      default:
        if (std::isalnum(static_cast<unsigned char>(c)))
          return Error(std::string("escape \\") + c + " is not supported (no back-references, \\b, \\p)");
        literal->push_back(c);
        return Status::Ok();
    }
  }

  Result<Re> Class() {
    bool negate = false;
    if (More() && Peek() == '^') {
      negate = true;
      ++i_;
    }
    std::bitset<256> set;
    bool multibyte = false;
    while (true) {
      if (!More()) return Error("unterminated [...] class");
      if (Peek() == ']') {
        ++i_;
        break;
      }
      // One member: a character (possibly escaped) or a class escape; then maybe '-' and another.
      int lo = -1;
      std::string literal;
      if (Peek() == '\\') {
        ++i_;
        FGEMMA_RETURN_IF_ERROR(Escape(true, &set, &multibyte, &literal));
      } else {
        if (static_cast<uint8_t>(Peek()) >= 0x80) return Error("non-ASCII characters in a [...] class are not supported");
        literal.push_back(p_[i_++]);
      }
      if (literal.empty()) continue;  // a class escape
      lo = static_cast<uint8_t>(literal[0]);
      int hi = lo;
      if (i_ + 1 < p_.size() && Peek() == '-' && p_[i_ + 1] != ']') {
        ++i_;
        std::string end;
        if (Peek() == '\\') {
          ++i_;
          std::bitset<256> unused;
          bool unused_multi = false;
          FGEMMA_RETURN_IF_ERROR(Escape(true, &unused, &unused_multi, &end));
          if (end.empty()) return Error("a class escape cannot end a range");
        } else {
          if (static_cast<uint8_t>(Peek()) >= 0x80) return Error("non-ASCII characters in a [...] class are not supported");
          end.push_back(p_[i_++]);
        }
        hi = static_cast<uint8_t>(end[0]);
        if (hi < lo) return Error("range out of order in a [...] class");
      }
      set |= Range(lo, hi);
    }
    if (negate) return Set(Ascii() & ~set, !multibyte);
    return Set(set, multibyte);
  }

  Result<Re> Atom(int depth) {
    const char c = p_[i_];
    switch (c) {
      case '(': {
        ++i_;
        if (More() && Peek() == '?') {
          if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
            i_ += 2;
          } else {
            return Error("lookaround and named groups are not supported");
          }
        }
        FGEMMA_TRY(Re inner, Alt(depth + 1));
        if (!More() || Peek() != ')') return Error("unterminated group");
        ++i_;
        return inner;
      }
      case '[': ++i_; return Class();
      case '.': {
        ++i_;
        std::bitset<256> set = Ascii();
        set.reset('\n');
        set.reset('\r');
        return Set(set, true);
      }
      case '\\': {
        ++i_;
        std::bitset<256> set;
        bool multibyte = false;
        std::string literal;
        FGEMMA_RETURN_IF_ERROR(Escape(false, &set, &multibyte, &literal));
        if (!literal.empty()) return Literal(literal);
        return Set(set, multibyte);
      }
      case '^':
      case '$': return Error("anchors are supported only as the first (^) and last ($) character");
      case '*':
      case '+':
      case '?':
      case '{': return Error(std::string("nothing to repeat before '") + c + "'");
      default: {
        const uint8_t b = static_cast<uint8_t>(c);
        const size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
        if (i_ + len > p_.size()) return Error("pattern is not valid UTF-8");
        const std::string_view bytes = p_.substr(i_, len);
        i_ += len;
        return Literal(bytes);
      }
    }
  }

  std::string_view p_;
  const std::string& path_;
  size_t i_ = 0;
};

struct Nfa {
  struct Edge {
    uint8_t lo, hi;
    int to;
  };
  std::vector<std::vector<int>> eps;
  std::vector<std::vector<Edge>> edges;
  bool too_big = false;

  int New() {
    if (eps.size() >= kMaxNfaStates) too_big = true;
    eps.emplace_back();
    edges.emplace_back();
    return static_cast<int>(eps.size() - 1);
  }

  std::pair<int, int> Emit(const Re& re) {
    if (too_big) return {0, 0};
    switch (re.kind) {
      case Re::Kind::kSet: {
        const int s = New(), e = New();
        for (int c = 0; c < 256;) {
          if (!re.set.test(static_cast<size_t>(c))) {
            ++c;
            continue;
          }
          int end = c;
          while (end + 1 < 256 && re.set.test(static_cast<size_t>(end + 1))) ++end;
          edges[static_cast<size_t>(s)].push_back({static_cast<uint8_t>(c), static_cast<uint8_t>(end), e});
          c = end + 1;
        }
        if (re.multibyte) {  // lead byte, then its continuation bytes
          const int c1 = New(), c2 = New(), c3 = New();
          edges[static_cast<size_t>(s)].push_back({0xC2, 0xDF, c1});
          edges[static_cast<size_t>(s)].push_back({0xE0, 0xEF, c2});
          edges[static_cast<size_t>(s)].push_back({0xF0, 0xF4, c3});
          edges[static_cast<size_t>(c3)].push_back({0x80, 0xBF, c2});
          edges[static_cast<size_t>(c2)].push_back({0x80, 0xBF, c1});
          edges[static_cast<size_t>(c1)].push_back({0x80, 0xBF, e});
        }
        return {s, e};
      }
      case Re::Kind::kConcat: {
        const int s = New();
        int cur = s;
        for (const Re& k : re.kids) {
          const auto [ks, ke] = Emit(k);
          eps[static_cast<size_t>(cur)].push_back(ks);
          cur = ke;
        }
        return {s, cur};
      }
      case Re::Kind::kAlt: {
        const int s = New(), e = New();
        for (const Re& k : re.kids) {
          const auto [ks, ke] = Emit(k);
          eps[static_cast<size_t>(s)].push_back(ks);
          eps[static_cast<size_t>(ke)].push_back(e);
        }
        return {s, e};
      }
      case Re::Kind::kRepeat: {
        const int s = New();
        int cur = s;
        for (int i = 0; i < re.min && !too_big; ++i) {
          const auto [ks, ke] = Emit(re.kids[0]);
          eps[static_cast<size_t>(cur)].push_back(ks);
          cur = ke;
        }
        if (re.max < 0) {
          const auto [ks, ke] = Emit(re.kids[0]);
          eps[static_cast<size_t>(cur)].push_back(ks);
          eps[static_cast<size_t>(ke)].push_back(cur);
          return {s, cur};
        }
        const int e = New();
        eps[static_cast<size_t>(cur)].push_back(e);
        for (int i = re.min; i < re.max && !too_big; ++i) {
          const auto [ks, ke] = Emit(re.kids[0]);
          eps[static_cast<size_t>(cur)].push_back(ks);
          cur = ke;
          eps[static_cast<size_t>(cur)].push_back(e);
        }
        return {s, e};
      }
    }
    return {0, 0};
  }

  void Closure(std::vector<int>* states) const {
    std::vector<uint8_t> in(eps.size(), 0);
    for (int s : *states) in[static_cast<size_t>(s)] = 1;
    for (size_t i = 0; i < states->size(); ++i) {
      for (int t : eps[static_cast<size_t>((*states)[i])]) {
        if (!in[static_cast<size_t>(t)]) {
          in[static_cast<size_t>(t)] = 1;
          states->push_back(t);
        }
      }
    }
    std::sort(states->begin(), states->end());
  }
};

Re AnyRun() {
  Re rep;
  rep.kind = Re::Kind::kRepeat;
  rep.kids.push_back(Set(Ascii(), true));
  return rep;
}

}  // namespace

bool PatternDfa::Matches(std::string_view text) const {
  uint16_t s = start;
  for (unsigned char c : text) {
    s = next[s][c];
    if (s == kDead) return false;
  }
  return accepting[s] != 0;
}

Result<std::shared_ptr<const PatternDfa>> CompilePattern(std::string_view pattern, const std::string& path) {
  std::string_view body = pattern;
  const bool anchored_start = !body.empty() && body.front() == '^';
  if (anchored_start) body.remove_prefix(1);
  size_t backslashes = 0;  // a '$' preceded by an odd run of '\' is a literal
  for (size_t k = body.size() - (body.empty() ? 0 : 1); k > 0 && body[k - 1] == '\\'; --k) ++backslashes;
  const bool anchored_end = !body.empty() && body.back() == '$' && backslashes % 2 == 0;
  if (anchored_end) body.remove_suffix(1);
  Parser parser(body, path);
  FGEMMA_TRY(Re core, parser.Whole(anchored_start || anchored_end));
  Re whole;
  if (!anchored_start) whole.kids.push_back(AnyRun());
  whole.kids.push_back(std::move(core));
  if (!anchored_end) whole.kids.push_back(AnyRun());

  Nfa nfa;
  const auto [start, accept] = nfa.Emit(whole);
  if (nfa.too_big) return InvalidArgument(path + ": pattern expands to more than " + std::to_string(kMaxNfaStates) + " automaton states");

  auto dfa = std::make_shared<PatternDfa>();
  std::map<std::vector<int>, uint16_t> ids;
  std::vector<std::vector<int>> sets;
  std::vector<int> first = {start};
  nfa.Closure(&first);
  ids[first] = 0;
  sets.push_back(first);
  for (size_t d = 0; d < sets.size(); ++d) {
    std::array<uint16_t, 256> row;
    row.fill(PatternDfa::kDead);
    for (int b = 0; b < 256; ++b) {
      std::vector<int> moved;
      for (int s : sets[d]) {
        for (const auto& e : nfa.edges[static_cast<size_t>(s)]) {
          if (b >= e.lo && b <= e.hi) moved.push_back(e.to);
        }
      }
      if (moved.empty()) continue;
      std::sort(moved.begin(), moved.end());
      moved.erase(std::unique(moved.begin(), moved.end()), moved.end());
      nfa.Closure(&moved);
      auto [it, added] = ids.emplace(moved, static_cast<uint16_t>(sets.size()));
      if (added) {
        if (sets.size() >= kMaxPatternStates)
          return InvalidArgument(path + ": pattern needs more than " + std::to_string(kMaxPatternStates) + " automaton states");
        sets.push_back(moved);
      }
      row[static_cast<size_t>(b)] = it->second;
    }
    dfa->next.push_back(row);
  }
  const size_t n = sets.size();
  dfa->accepting.assign(n, 0);
  dfa->to_accept.assign(n, PatternDfa::kUnreachable);
  std::vector<std::vector<uint16_t>> from(n);
  for (size_t s = 0; s < n; ++s) {
    for (uint16_t t : dfa->next[s]) {
      if (t != PatternDfa::kDead && (from[t].empty() || from[t].back() != s)) from[t].push_back(static_cast<uint16_t>(s));
    }
  }
  std::deque<uint16_t> queue;
  for (size_t s = 0; s < n; ++s) {
    if (std::binary_search(sets[s].begin(), sets[s].end(), accept)) {
      dfa->accepting[s] = 1;
      dfa->to_accept[s] = 0;
      queue.push_back(static_cast<uint16_t>(s));
    }
  }
  while (!queue.empty()) {
    const uint16_t t = queue.front();
    queue.pop_front();
    for (uint16_t s : from[t]) {
      if (dfa->to_accept[s] == PatternDfa::kUnreachable) {
        dfa->to_accept[s] = dfa->to_accept[t] + 1;
        queue.push_back(s);
      }
    }
  }
  if (dfa->to_accept[0] == PatternDfa::kUnreachable) return InvalidArgument(path + ": pattern matches no string");
  return std::shared_ptr<const PatternDfa>(std::move(dfa));
}

size_t FinishCharacter(const PatternDfa& dfa, uint16_t state, int need, uint8_t lo, uint8_t hi, uint16_t* out) {
  std::array<uint16_t, kMaxPatternStates> next;
  size_t count = 1;
  out[0] = state;
  for (int i = 0; i < need && count > 0; ++i) {
    const int first = i == 0 ? lo : 0x80, last = i == 0 ? hi : 0xBF;
    std::bitset<kMaxPatternStates> seen;
    size_t reached = 0;
    for (size_t j = 0; j < count; ++j) {
      for (int b = first; b <= last; ++b) {
        const uint16_t r = dfa.next[out[j]][static_cast<size_t>(b)];
        if (r == PatternDfa::kDead || seen[r]) continue;
        seen[r] = true;
        next[reached++] = r;
      }
    }
    std::copy(next.begin(), next.begin() + static_cast<std::ptrdiff_t>(reached), out);
    count = reached;
  }
  return count;
}

std::vector<uint16_t> PatternLengthTable(const PatternDfa& dfa, uint32_t max_chars) {
  const size_t n = dfa.next.size(), width = static_cast<size_t>(max_chars) + 1;
  // One whole character from each state: the states it may lead to, with its fewest bytes.
  struct Step {
    uint16_t to;
    uint8_t bytes;
  };
  std::vector<std::vector<Step>> steps(n);
  std::vector<uint8_t> best(n);
  std::array<uint16_t, kMaxPatternStates> ends;
  for (size_t q = 0; q < n; ++q) {
    std::fill(best.begin(), best.end(), 0);
    auto add = [&](uint16_t r, uint8_t bytes) {
      if (best[r] == 0 || bytes < best[r]) best[r] = bytes;
    };
    for (int b = 1; b < 0x80; ++b) {
      if (dfa.next[q][static_cast<size_t>(b)] != PatternDfa::kDead) add(dfa.next[q][static_cast<size_t>(b)], 1);
    }
    for (int lead = 0xC2; lead <= 0xF4; ++lead) {
      const uint16_t r = dfa.next[q][static_cast<size_t>(lead)];
      if (r == PatternDfa::kDead) continue;
      const int need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : 1;
      const uint8_t lo = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
      const uint8_t hi = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
      const size_t count = FinishCharacter(dfa, r, need, lo, hi, ends.data());
      for (size_t i = 0; i < count; ++i) add(ends[i], static_cast<uint8_t>(need + 1));
    }
    for (size_t r = 0; r < n; ++r) {
      if (best[r] != 0) steps[q].push_back({static_cast<uint16_t>(r), best[r]});
    }
  }
  std::vector<uint16_t> table(n * width, kNoLength);
  for (size_t q = 0; q < n; ++q) {
    if (dfa.accepting[q]) table[q * width] = 0;
  }
  for (size_t k = 1; k < width; ++k) {
    for (size_t q = 0; q < n; ++q) {
      uint32_t fewest = kNoLength;
      for (const Step& st : steps[q]) {
        const uint16_t rest = table[st.to * width + k - 1];
        if (rest != kNoLength) fewest = std::min<uint32_t>(fewest, rest + st.bytes);
      }
      table[q * width + k] = static_cast<uint16_t>(std::min<uint32_t>(fewest, kNoLength));
    }
  }
  return table;
}

std::string_view FormatPattern(std::string_view format) {
  if (format == "date") return "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$";
  if (format == "time") return "^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?$";
  if (format == "date-time")
    return "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?"
           "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";
  if (format == "uuid") return "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
  if (format == "email") return "^[^@\\s<>]+@[^@\\s<>.]+(\\.[^@\\s<>.]+)+$";
  return {};
}

}  // namespace fgemma
