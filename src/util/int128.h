// A signed 128-bit integer that behaves the same on every target, 32-bit ones included.
//
// Why not `__int128`: GCC and Clang offer it only on 64-bit targets, and fgemma also builds for
// i386 and armhf processes (armeabi-v7a). The exact decimal arithmetic of numeric schema keywords
// (chat/schema_number.h) needs ~115 bits, and must draw the same line on a phone as on a server, so
// it uses this one implementation everywhere (tested against `__int128` where the host has it).
//
// Semantics follow C++'s signed integers: two's complement, +, - and * wrap modulo 2^128 (callers
// keep their values far from the ends), / and % truncate toward zero, division by zero is the
// caller's bug (asserted in debug builds, 0 otherwise).
#pragma once

#include <cassert>
#include <compare>
#include <concepts>
#include <cstdint>
#include <type_traits>

namespace fgemma {

class Int128 {
 public:
  constexpr Int128() = default;
  template <std::integral T>
  constexpr Int128(T v)  // NOLINT(google-explicit-constructor): an integer converts like one
      : lo_(static_cast<uint64_t>(v)), hi_(std::is_signed_v<T> && v < 0 ? ~uint64_t{0} : 0) {}

  constexpr uint64_t low() const { return lo_; }
  constexpr uint64_t high() const { return hi_; }
  constexpr bool negative() const { return (hi_ >> 63) != 0; }

  friend constexpr Int128 operator+(Int128 a, Int128 b) {
    Int128 r;
    r.lo_ = a.lo_ + b.lo_;
    r.hi_ = a.hi_ + b.hi_ + (r.lo_ < a.lo_ ? 1 : 0);
    return r;
  }
  friend constexpr Int128 operator-(Int128 a) {
    Int128 r;
    r.lo_ = ~a.lo_ + 1;
    r.hi_ = ~a.hi_ + (r.lo_ == 0 ? 1 : 0);
    return r;
  }
  friend constexpr Int128 operator-(Int128 a, Int128 b) { return a + -b; }
  friend constexpr Int128 operator*(Int128 a, Int128 b) {
    // Modulo 2^128, two's complement multiplication is the same for signed and unsigned.
    Int128 r;
    r.lo_ = a.lo_ * b.lo_;
    r.hi_ = MulHigh(a.lo_, b.lo_) + a.lo_ * b.hi_ + a.hi_ * b.lo_;
    return r;
  }
  friend constexpr Int128 operator/(Int128 a, Int128 b) {
    Int128 q, r;
    DivMod(a, b, &q, &r);
    return q;
  }
  friend constexpr Int128 operator%(Int128 a, Int128 b) {
    Int128 q, r;
    DivMod(a, b, &q, &r);
    return r;
  }
  constexpr Int128& operator+=(Int128 b) { return *this = *this + b; }
  constexpr Int128& operator-=(Int128 b) { return *this = *this - b; }
  constexpr Int128& operator*=(Int128 b) { return *this = *this * b; }
  constexpr Int128& operator++() { return *this = *this + 1; }
  constexpr Int128& operator--() { return *this = *this - 1; }

  friend constexpr bool operator==(Int128 a, Int128 b) = default;
  friend constexpr std::strong_ordering operator<=>(Int128 a, Int128 b) {
    if (a.hi_ != b.hi_) return static_cast<int64_t>(a.hi_) <=> static_cast<int64_t>(b.hi_);
    return a.lo_ <=> b.lo_;
  }

 private:
  // The high 64 bits of the 128-bit product a * b, from 32-bit halves.
  static constexpr uint64_t MulHigh(uint64_t a, uint64_t b) {
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const uint64_t middle = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
  }
  // Unsigned n / d and n % d (d != 0): 64-bit division when both fit, else shift and subtract.
  static constexpr void DivModUnsigned(Int128 n, Int128 d, Int128* q, Int128* r) {
    if (n.hi_ == 0 && d.hi_ == 0) {
      *q = Int128(n.lo_ / d.lo_);
      *r = Int128(n.lo_ % d.lo_);
      return;
    }
    Int128 quotient, rest;
    for (int bit = 127; bit >= 0; --bit) {
      rest = Int128::Bits(rest.lo_ << 1, (rest.hi_ << 1) | (rest.lo_ >> 63));  // rest <<= 1
      rest.lo_ |= (bit >= 64 ? n.hi_ >> (bit - 64) : n.lo_ >> bit) & 1;
      if (!LessUnsigned(rest, d)) {
        rest = rest - d;
        if (bit >= 64) quotient.hi_ |= uint64_t{1} << (bit - 64);
        else quotient.lo_ |= uint64_t{1} << bit;
      }
    }
    *q = quotient;
    *r = rest;
  }
  static constexpr void DivMod(Int128 a, Int128 b, Int128* q, Int128* r) {
    assert(b != 0 && "Int128 division by zero");
    if (b == 0) {
      *q = *r = 0;
      return;
    }
    const bool na = a.negative(), nb = b.negative();
    DivModUnsigned(na ? -a : a, nb ? -b : b, q, r);
    if (na != nb) *q = -*q;  // truncation toward zero: the remainder takes the dividend's sign
    if (na) *r = -*r;
  }
  static constexpr bool LessUnsigned(Int128 a, Int128 b) { return a.hi_ != b.hi_ ? a.hi_ < b.hi_ : a.lo_ < b.lo_; }
  static constexpr Int128 Bits(uint64_t lo, uint64_t hi) {
    Int128 r;
    r.lo_ = lo;
    r.hi_ = hi;
    return r;
  }

  uint64_t lo_ = 0;  // two's complement: value = hi_ * 2^64 + lo_, hi_ read as signed
  uint64_t hi_ = 0;
};

}  // namespace fgemma
