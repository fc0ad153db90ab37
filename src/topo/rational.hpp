// Exact fractions for link rates.
//
// Optimal collective rates on a capacitated graph are ratios of small integers (the DGX-1V's
// allreduce bound is 24/7 link units); tests must compare them exactly and `grove topo
// bounds --json` prints them as fractions. Numerator and denominator stay reduced with a
// positive denominator; the values that occur (sums of a few hundred link counts over rank
// counts) are far from overflowing 64 bits, and arithmetic checks that anyway.
#pragma once

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>

namespace grove::topo {

class Rational {
 public:
  constexpr Rational() = default;
  constexpr Rational(int64_t value) : num_(value) {}  // NOLINT: integers are rationals
  Rational(int64_t num, int64_t den) : num_(num), den_(den) { normalize(); }

  int64_t num() const { return num_; }
  int64_t den() const { return den_; }
  double toDouble() const { return static_cast<double>(num_) / static_cast<double>(den_); }
  /// "24/7", or "3" when the denominator is 1.
  std::string toString() const {
    return den_ == 1 ? std::to_string(num_) : std::to_string(num_) + "/" + std::to_string(den_);
  }

  friend Rational operator+(Rational a, Rational b) {
    return {checkedAdd(checkedMul(a.num_, b.den_), checkedMul(b.num_, a.den_)),
            checkedMul(a.den_, b.den_)};
  }
  friend Rational operator-(Rational a, Rational b) { return a + Rational(-b.num_, b.den_); }
  friend Rational operator*(Rational a, Rational b) {
    return {checkedMul(a.num_, b.num_), checkedMul(a.den_, b.den_)};
  }
  friend Rational operator/(Rational a, Rational b) {
    if (b.num_ == 0) throw std::domain_error("grove::topo::Rational: division by zero");
    return {checkedMul(a.num_, b.den_), checkedMul(a.den_, b.num_)};
  }
  Rational& operator+=(Rational b) { return *this = *this + b; }
  Rational& operator-=(Rational b) { return *this = *this - b; }
  Rational& operator*=(Rational b) { return *this = *this * b; }
  Rational& operator/=(Rational b) { return *this = *this / b; }

  friend bool operator==(Rational a, Rational b) { return a.num_ == b.num_ && a.den_ == b.den_; }
  friend auto operator<=>(Rational a, Rational b) {
    // Cross products of two 64-bit values need 128 bits (a GCC/Clang extension).
    __extension__ using Wide = __int128;
    return static_cast<Wide>(a.num_) * b.den_ <=> static_cast<Wide>(b.num_) * a.den_;
  }

 private:
  static int64_t checkedMul(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error("grove::topo::Rational");
    return r;
  }
  static int64_t checkedAdd(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error("grove::topo::Rational");
    return r;
  }
  void normalize() {
    if (den_ == 0) throw std::domain_error("grove::topo::Rational: zero denominator");
    if (den_ < 0) {
      num_ = -num_;
      den_ = -den_;
    }
    const int64_t g = std::gcd(num_, den_);
    if (g > 1) {
      num_ /= g;
      den_ /= g;
    }
  }

  int64_t num_ = 0;
  int64_t den_ = 1;
};

}  // namespace grove::topo
