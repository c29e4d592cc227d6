// Int128 (util/int128.h): fixed cases whose answers are written out (they run on 32-bit targets
// too, in the cross stage), and, where the host has __int128, random cases against it.
#include "util/int128.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace fgemma {
namespace {

std::string Decimal(Int128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  std::string out;
  while (v != 0) {
    const Int128 digit = v % 10;  // takes v's sign
    out.push_back(static_cast<char>('0' + (neg ? -digit : digit).low()));
    v = v / 10;
  }
  if (neg) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

Int128 Pow10(int n) {
  Int128 v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  return v;
}

TEST(Int128, WrittenOutCases) {
  EXPECT_EQ(Decimal(Pow10(35)), "1" + std::string(35, '0'));
  EXPECT_EQ(Decimal(Pow10(38) + 1), "1" + std::string(37, '0') + "1");
  EXPECT_EQ(Decimal(-Pow10(35) / 3), "-" + std::string(35, '3'));
  EXPECT_EQ(Decimal(-Pow10(35) % 3), "-1");
  EXPECT_EQ(Decimal(Pow10(35) % -3), "1");  // the remainder takes the dividend's sign
  EXPECT_EQ(Decimal((Pow10(20) + 3) * Pow10(15)), "1" + std::string(19, '0') + "3" + std::string(15, '0'));
  EXPECT_EQ(Decimal(Int128(UINT64_MAX) * Int128(uint64_t{1} << 62)), "85070591730234615861231965839514664960");
  EXPECT_EQ(Decimal(Int128(UINT64_MAX) * Int128(UINT64_MAX)), "-36893488147419103231");  // wraps past 2^127
  EXPECT_EQ(Decimal(Int128(INT64_MIN) * 4), "-36893488147419103232");
  EXPECT_EQ(Decimal(Int128(-7) / 2), "-3");
  EXPECT_EQ(Decimal(Int128(-7) % 2), "-1");
  EXPECT_EQ(Decimal(Pow10(36) / Pow10(18)), "1" + std::string(18, '0'));
  EXPECT_EQ(Decimal((Pow10(36) + 12345) % Pow10(20)), "12345");
  Int128 v = UINT64_MAX;
  ++v;
  EXPECT_EQ(v.high(), 1u);
  EXPECT_EQ(v.low(), 0u);
  --v;
  EXPECT_EQ(v, Int128(UINT64_MAX));
  EXPECT_LT(-Pow10(35), Int128(-1));
  EXPECT_LT(Int128(-1), Int128(0));
  EXPECT_LT(Int128(UINT64_MAX), Pow10(20));
  EXPECT_GT(Pow10(35), Int128(INT64_MAX));
  EXPECT_EQ(Int128(-5).negative(), true);
  EXPECT_EQ(Int128(-5), -Int128(5));
  EXPECT_EQ(Int128(-5) - 3, Int128(-8));
}

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 Native;

Native ToNative(Int128 v) {
  return static_cast<Native>((static_cast<unsigned __int128>(v.high()) << 64) | v.low());
}
Int128 FromNative(Native v) {
  const auto u = static_cast<unsigned __int128>(v);
  const Int128 high = Int128(static_cast<uint64_t>(u >> 64)) * Int128(UINT64_MAX) + Int128(static_cast<uint64_t>(u >> 64));
  return high + Int128(static_cast<uint64_t>(u));  // high * 2^64 + low, modulo 2^128
}

TEST(Int128, MatchesNativeInt128OnRandomValues) {
  std::mt19937_64 rng(1234);
  // Values of every width from 1 to 126 bits, either sign, so products and quotients stay defined.
  auto draw = [&](int bits) {
    Native v = static_cast<Native>((static_cast<unsigned __int128>(rng()) << 64 | rng()) >> (128 - bits));
    return (rng() & 1) ? -v : v;
  };
  for (int i = 0; i < 200000; ++i) {
    const int wa = 1 + static_cast<int>(rng() % 126), wb = 1 + static_cast<int>(rng() % 126);
    const Native a = draw(wa), b = draw(wb);
    const Int128 x = FromNative(a), y = FromNative(b);
    ASSERT_EQ(ToNative(x), a);
    ASSERT_EQ(ToNative(x + y), a + b) << i;
    ASSERT_EQ(ToNative(x - y), a - b) << i;
    ASSERT_EQ(ToNative(-x), -a) << i;
    if (wa + wb <= 126) ASSERT_EQ(ToNative(x * y), a * b) << i;
    if (b != 0) {
      ASSERT_EQ(ToNative(x / y), a / b) << i;
      ASSERT_EQ(ToNative(x % y), a % b) << i;
    }
    ASSERT_EQ(x < y, a < b) << i;
    ASSERT_EQ(x == y, a == b) << i;
  }
}
#endif

}  // namespace
}  // namespace fgemma
