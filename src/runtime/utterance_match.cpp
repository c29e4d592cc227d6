#include "runtime/utterance_match.h"

#include <algorithm>
#include <cctype>

namespace fgemma {

bool WordByte(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    if (!WordByte(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && WordByte(s[j])) ++j;
    out.push_back(Lower(s.substr(i, j - i)));
    i = j;
  }
  return out;
}

size_t FindValue(std::string_view text, std::string_view value) {
  if (value.empty()) return 0;
  const std::string t = Lower(text), v = Lower(value);
  for (size_t at = t.find(v); at != std::string::npos; at = t.find(v, at + 1)) {
    const bool left = at == 0 || !WordByte(t[at - 1]) || !WordByte(v.front());
    const size_t end = at + v.size();
    const bool right = end == t.size() || !WordByte(t[end]) || !WordByte(v.back());
    if (left && right) return end;
  }
  return std::string_view::npos;
}

bool SaysValue(std::string_view text, std::string_view value) { return FindValue(text, value) != std::string_view::npos; }

std::string_view NumberSoFar(std::string_view hyp) {
  const size_t colon = hyp.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == hyp.size()) return {};
  const std::string_view tail = hyp.substr(colon + 1);
  const bool digits = std::all_of(tail.begin(), tail.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-';
  });
  return digits ? tail : std::string_view();
}

bool Names(const std::string& word, const std::string& part) {
  if (word == part) return true;
  if (word.size() < 4 || part.size() < 4) return false;
  return word.starts_with(part) || part.starts_with(word);
}

size_t TextEnd(std::string_view cont, const std::vector<std::string>& enum_values) {
  const std::string lower = Lower(cont);
  for (size_t w = 1; w < lower.size(); ++w) {
    if (!WordByte(lower[w]) || WordByte(lower[w - 1])) continue;
    const bool names = std::any_of(enum_values.begin(), enum_values.end(), [&](const std::string& v) {
      if (v.empty() || lower.compare(w, v.size(), v) != 0) return false;
      const size_t end = w + v.size();
      return end == lower.size() || !WordByte(lower[end]) || !WordByte(v.back());
    });
    if (!names) continue;
    size_t cut = w;  // back over the spaces and short words before it
    for (;;) {
      size_t b = cut;
      while (b > 0 && !WordByte(lower[b - 1])) --b;
      size_t a = b;
      while (a > 0 && WordByte(lower[a - 1])) --a;
      if (a == b || b - a > 3 || a == 0 || !WordByte(lower[a]) || WordByte(lower[a - 1])) {
        cut = b;
        break;
      }
      cut = a;
    }
    return cut;
  }
  return std::string_view::npos;
}

bool FillDigits(std::string_view form, std::string_view text, std::string* out) {
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  out->clear();
  size_t t = 0, filled = 0;
  for (size_t f = 0; f < form.size();) {
    if (!digit(form[f])) {
      out->push_back(form[f++]);
      continue;
    }
    size_t f_end = f;
    while (f_end < form.size() && digit(form[f_end])) ++f_end;
    while (t < text.size() && !digit(text[t])) ++t;
    size_t t_end = t;
    while (t_end < text.size() && digit(text[t_end])) ++t_end;
    const std::string_view place = form.substr(f, f_end - f), run = text.substr(t, t_end - t);
    if (run.empty()) {
      if (place.find_first_not_of('0') != std::string_view::npos) return false;
      out->append(place);
    } else {
      if (run.size() > place.size()) return false;
      out->append(place.size() - run.size(), '0');
      out->append(run);
      ++filled;
    }
    t = t_end;
    f = f_end;
  }
  return filled > 0;
}

std::vector<std::string_view> Numbers(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) || (i > 0 && WordByte(text[i - 1]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) ||
                               (text[j] == '.' && j + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[j + 1])))))
      ++j;
    if (j == text.size() || !WordByte(text[j])) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace fgemma
