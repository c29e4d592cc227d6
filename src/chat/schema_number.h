// Exact decimal arithmetic for numeric schema keywords (minimum, maximum, exclusive bounds,
// multipleOf), shared by the validator and the call grammar so that both draw the same line.
//
// A bound is read as the shortest decimal that round-trips its JSON number (0.1 is "0.1", not the
// binary double's 55-digit expansion); comparing decimals exactly then agrees with comparing the
// doubles whenever the value has at most 15 significant digits, which is all the grammar writes.
// The grammar works in units of 1e-15 (the finest fraction it writes) held in a 128-bit integer
// (util/int128.h: the same arithmetic on 32-bit targets, which have no __int128).
#pragma once

#include <string>
#include <string_view>

#include "util/int128.h"
#include "util/json.h"

namespace fgemma {

using SchemaUnits = Int128;

inline constexpr int kUnitDigits = 15;  // one unit is 1e-15
// Magnitudes beyond this many units are clamped to it (no value the grammar writes comes near).
inline constexpr SchemaUnits kUnitsClamp = static_cast<SchemaUnits>(1000000000000000000ll) * 100000000000000000ll;  // 1e35

// 10^n as units, n in [0, 35].
SchemaUnits Pow10Units(int n);

// The shortest decimal text of a JSON number ("3", "-0.25", "1e+20").
std::string DecimalText(const Json& number);

// Exact comparison of two decimal texts (-?digits(.digits)?([eE][+-]?digits)?): <0, 0, >0.
int CompareDecimal(std::string_view a, std::string_view b);

enum class Rounding { kFloor, kCeil };
// `text` in units of 1e-15, rounded as asked when it has more than 15 fractional digits and clamped
// to +-kUnitsClamp; `*exact` (optional) says whether no digit was lost.
SchemaUnits DecimalToUnits(std::string_view text, Rounding rounding, bool* exact = nullptr);

// Whether [lo, hi] holds a multiple of `grid` (grid > 0).
bool HoldsMultiple(SchemaUnits lo, SchemaUnits hi, SchemaUnits grid);
// lcm(a, b) for a, b > 0, or 0 when it exceeds kUnitsClamp.
SchemaUnits LcmUnits(SchemaUnits a, SchemaUnits b);

}  // namespace fgemma
