#include "chat/schema_number.h"

#include <algorithm>

namespace fgemma {
namespace {

// value = (neg ? -1 : 1) * digits * 10^exp10, digits without leading or trailing zeros ("" for 0).
struct Normalized {
  bool neg = false;
  std::string digits;
  long exp10 = 0;
};

Normalized Normalize(std::string_view t) {
  Normalized n;
  size_t i = 0;
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) n.neg = t[i++] == '-';
  long frac = 0;
  bool in_frac = false;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '.') {
      in_frac = true;
    } else if (c >= '0' && c <= '9') {
      if (!(n.digits.empty() && c == '0')) n.digits.push_back(c);
      if (in_frac) ++frac;
    } else {
      break;
    }
  }
  long exp = 0;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    bool exp_neg = false;
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) exp_neg = t[i++] == '-';
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) exp = std::min(exp * 10 + (t[i] - '0'), 100000l);
    if (exp_neg) exp = -exp;
  }
  n.exp10 = exp - frac;
  while (!n.digits.empty() && n.digits.back() == '0') {
    n.digits.pop_back();
    ++n.exp10;
  }
  if (n.digits.empty()) n.neg = false;
  return n;
}

SchemaUnits DigitsValue(std::string_view digits) {
  SchemaUnits v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

}  // namespace

SchemaUnits Pow10Units(int n) {
  SchemaUnits v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  return v;
}

std::string DecimalText(const Json& number) { return number.dump(); }

int CompareDecimal(std::string_view a, std::string_view b) {
  const Normalized x = Normalize(a), y = Normalize(b);
  const int sx = x.digits.empty() ? 0 : x.neg ? -1 : 1, sy = y.digits.empty() ? 0 : y.neg ? -1 : 1;
  if (sx != sy) return sx < sy ? -1 : 1;
  if (sx == 0) return 0;
  int mag = 0;  // magnitude order, then digits
  const long tx = static_cast<long>(x.digits.size()) + x.exp10, ty = static_cast<long>(y.digits.size()) + y.exp10;
  if (tx != ty) {
    mag = tx < ty ? -1 : 1;
  } else {
    const size_t n = std::max(x.digits.size(), y.digits.size());
    for (size_t i = 0; i < n && mag == 0; ++i) {
      const char cx = i < x.digits.size() ? x.digits[i] : '0', cy = i < y.digits.size() ? y.digits[i] : '0';
      if (cx != cy) mag = cx < cy ? -1 : 1;
    }
  }
  return sx > 0 ? mag : -mag;
}

SchemaUnits DecimalToUnits(std::string_view text, Rounding rounding, bool* exact) {
  const Normalized n = Normalize(text);
  if (exact != nullptr) *exact = true;
  if (n.digits.empty()) return 0;
  const long shift = n.exp10 + kUnitDigits;
  const long len = static_cast<long>(n.digits.size());
  SchemaUnits magnitude = 0;
  bool lost = false;
  if (len + shift > 35) {
    magnitude = kUnitsClamp;
    lost = true;
  } else if (shift >= 0) {
    magnitude = DigitsValue(n.digits) * Pow10Units(static_cast<int>(shift));
  } else {
    const long keep = std::max(0l, len + shift);
    magnitude = DigitsValue(std::string_view(n.digits).substr(0, static_cast<size_t>(keep)));
    lost = true;  // the dropped digits end in a non-zero one
  }
  if (exact != nullptr) *exact = !lost;
  if (magnitude >= kUnitsClamp) return n.neg ? -kUnitsClamp : kUnitsClamp;
  const bool up = lost && (n.neg ? rounding == Rounding::kFloor : rounding == Rounding::kCeil);
  if (up) ++magnitude;
  return n.neg ? -magnitude : magnitude;
}

bool HoldsMultiple(SchemaUnits lo, SchemaUnits hi, SchemaUnits grid) {
  if (lo > hi) return false;
  // The smallest multiple of grid >= lo (division truncates toward zero).
  SchemaUnits q = lo / grid;
  if (q * grid < lo) ++q;
  return q * grid <= hi;
}

SchemaUnits LcmUnits(SchemaUnits a, SchemaUnits b) {
  SchemaUnits x = a, y = b;
  while (y != 0) {
    const SchemaUnits t = x % y;
    x = y;
    y = t;
  }
  const SchemaUnits part = a / x;
  if (part > kUnitsClamp / b) return 0;
  return part * b;
}

}  // namespace fgemma
