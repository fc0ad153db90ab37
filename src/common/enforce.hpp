// Invariant checks (Gloo's GLOO_ENFORCE is the model): a condition grove's own code must make
// true, checked where a violation would otherwise corrupt memory or hang. A failure is a bug
// in grove, not in the caller, so it throws grove::Error with ErrorCode::kInternalError and a
// message naming the file, the line, the condition and, for the comparisons, both values:
//   "internal error at src/plan/plan.cpp:42: check 'a == b' failed (3 vs 4): lane"
//
//   GROVE_ENFORCE(cond, ...)           cond must hold
//   GROVE_ENFORCE_EQ(a, b, ...)        a == b   (also _NE, _LT, _LE, _GT, _GE)
// The optional trailing arguments are printed after the check, separated by spaces.
#pragma once

#include <fmt/format.h>

#include <sstream>
#include <string>
#include <string_view>

#include "grove/error.hpp"

namespace grove::enforce {

/// The trailing arguments of a check, printed into one string ("" for none).
template <class... Args>
std::string details(const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return {};
  } else {
    std::ostringstream out;
    const char* separator = "";
    ((out << separator << args, separator = " "), ...);
    return out.str();
  }
}

/// Throws the failure of a check at `file`:`line`; `values` is "" or "(a vs b)".
[[noreturn]] void fail(std::string_view file, int line, std::string_view condition,
                       std::string_view values, const std::string& details);

/// One operand, printed for the message.
template <class T>
std::string show(const T& value) {
  if constexpr (fmt::is_formattable<T>::value) {
    return fmt::format("{}", value);
  } else {
    std::ostringstream out;
    out << value;
    return out.str();
  }
}

// The failing branches, out of line and cold: a check costs its comparison and one
// predictable branch where it stands, so that it does not keep small hot functions (a
// buffer view's chunk, a FIFO's slot) from being inlined.
template <class... Details>
[[noreturn, gnu::cold, gnu::noinline]] void failCheck(const char* file, int line,
                                                      const char* condition,
                                                      const Details&... trailing) {
  fail(file, line, condition, "", details(trailing...));
}

template <class A, class B, class... Details>
[[noreturn, gnu::cold, gnu::noinline]] void failComparison(const char* file, int line,
                                                           const char* condition, const A& a,
                                                           const B& b, const Details&... trailing) {
  fail(file, line, condition, "(" + show(a) + " vs " + show(b) + ")", details(trailing...));
}

}  // namespace grove::enforce

#define GROVE_ENFORCE(condition, ...)                                                         \
  do {                                                                                        \
    if (!(condition)) [[unlikely]] {                                                          \
      ::grove::enforce::failCheck(__FILE__, __LINE__, #condition __VA_OPT__(, ) __VA_ARGS__); \
    }                                                                                         \
  } while (false)

// Each operand is evaluated once; the values are formatted only when the check fails.
#define GROVE_ENFORCE_OP_(op, a, b, ...)                                                        \
  do {                                                                                          \
    const auto& grove_enforce_a_ = (a);                                                         \
    const auto& grove_enforce_b_ = (b);                                                         \
    if (!(grove_enforce_a_ op grove_enforce_b_)) [[unlikely]] {                                 \
      ::grove::enforce::failComparison(__FILE__, __LINE__, #a " " #op " " #b, grove_enforce_a_, \
                                       grove_enforce_b_ __VA_OPT__(, ) __VA_ARGS__);            \
    }                                                                                           \
  } while (false)

#define GROVE_ENFORCE_EQ(a, b, ...) GROVE_ENFORCE_OP_(==, a, b __VA_OPT__(, ) __VA_ARGS__)
#define GROVE_ENFORCE_NE(a, b, ...) GROVE_ENFORCE_OP_(!=, a, b __VA_OPT__(, ) __VA_ARGS__)
#define GROVE_ENFORCE_LT(a, b, ...) GROVE_ENFORCE_OP_(<, a, b __VA_OPT__(, ) __VA_ARGS__)
#define GROVE_ENFORCE_LE(a, b, ...) GROVE_ENFORCE_OP_(<=, a, b __VA_OPT__(, ) __VA_ARGS__)
#define GROVE_ENFORCE_GT(a, b, ...) GROVE_ENFORCE_OP_(>, a, b __VA_OPT__(, ) __VA_ARGS__)
#define GROVE_ENFORCE_GE(a, b, ...) GROVE_ENFORCE_OP_(>=, a, b __VA_OPT__(, ) __VA_ARGS__)
