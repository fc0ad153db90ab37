// The parameter table: every grove knob (GROVE_* setting) with its type, default, range and
// one line of doc, declared once in parameter_list.hpp (in the shape of NCCL's NCCL_PARAM).
//
// A knob's value comes, in this order, from the code (grove::Options, here ParamOverrides),
// the environment, or the table's default. Values are parsed and checked here only, so a bad
// value fails the same way wherever it came from: grove::Error(kInvalidArgument) naming the
// variable, the value, where it came from and what was expected. Lower layers never read the
// environment: they get the resolved values from their caller.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "common/parameter_list.hpp"

namespace grove::common {

enum class ParamKind : uint8_t {
  kInteger,  ///< A decimal integer in [min, max] (and a multiple of multipleOf).
  kBoolean,  ///< 0 or 1.
  kEnum,     ///< One of `choices` (case-insensitive); kept in the table's spelling.
  kString,   ///< Any text.
};

enum class ParamScope : uint8_t {
  kCommunicator,  ///< Read when a communicator is created; grove::Options may set it.
  kLaunch,        ///< Read by the launch detection of fromEnv (which also honours Options).
  kProcess,       ///< Read once per process (the log); only the environment sets it.
};

/// One knob. Field order is the order of parameter_list.hpp's columns.
struct ParamSpec {
  std::string_view name;  ///< The environment variable, e.g. "GROVE_TIMEOUT".
  ParamKind kind;
  ParamScope scope;
  std::string_view fallback;  ///< The default as the environment spells it; "" = unset.
  std::string_view unit;      ///< Integers: "seconds", "bytes", ...
  int64_t min;                ///< Integers: the allowed range.
  int64_t max;
  int64_t multipleOf;        ///< Integers: values must be a multiple of this.
  std::string_view choices;  ///< Enums: the allowed values, "a|b|c".
  bool secret;               ///< Never printed (grove config shows "(set)").
  std::string_view doc;      ///< One line for humans.
};

/// Every knob's identifier: Param::kTimeout for GROVE_TIMEOUT, ...
enum class Param : uint8_t {
#define GROVE_PARAMETER_ID(id, ...) k##id,
  GROVE_PARAMETER_LIST(GROVE_PARAMETER_ID)
#undef GROVE_PARAMETER_ID
      kCount
};
inline constexpr size_t kParamCount = static_cast<size_t>(Param::kCount);

/// The table, in declaration order (indexable by Param).
inline constexpr std::array<ParamSpec, kParamCount> kParameters = {{
#define GROVE_PARAMETER_SPEC(id, ...) ParamSpec{__VA_ARGS__},
    GROVE_PARAMETER_LIST(GROVE_PARAMETER_SPEC)
#undef GROVE_PARAMETER_SPEC
}};

constexpr const ParamSpec& spec(Param param) { return kParameters[static_cast<size_t>(param)]; }

/// The table's default of an integer knob, for code that needs it as a constant.
constexpr int64_t defaultInteger(Param param) {
  std::string_view text = spec(param).fallback;
  const bool negative = !text.empty() && text.front() == '-';
  int64_t value = 0;
  for (char c : text.substr(negative ? 1 : 0)) value = value * 10 + (c - '0');
  return negative ? -value : value;
}

/// The knob called `name` ("GROVE_TIMEOUT"), or nullptr.
const ParamSpec* findParameter(std::string_view name);

/// Where a value came from.
enum class ParamSource : uint8_t { kDefault, kEnvironment, kCode };
std::string_view toString(ParamSource source);

/// One resolved value.
struct ParamValue {
  std::string text;    ///< As given (enums: the table's spelling); "" = unset.
  int64_t number = 0;  ///< Integers and booleans: the value; enums: the choice's index.
  ParamSource source = ParamSource::kDefault;
  bool isSet() const { return !text.empty(); }
};

/// Values set from code, by variable name (what grove::Options holds).
using ParamOverrides = std::map<std::string, std::string, std::less<>>;
/// Looks an environment variable up (std::getenv, or a test's table).
using Getenv = std::function<const char*(const char*)>;
/// std::getenv.
const char* processEnvironment(const char* name);

/// What `spec` accepts, in words ("an integer number of seconds in [1, 604800]").
std::string describeExpected(const ParamSpec& spec);

/// Parses `text` as a value of `spec`. Empty text is "unset" and gives the default. Throws
/// grove::Error(kInvalidArgument) "grove: GROVE_X='text' (set in the environment) is not
/// valid; expected ...".
ParamValue parseParameter(const ParamSpec& spec, std::string_view text, ParamSource source);

/// `spec`'s value: overrides, else the environment, else the default; validated.
ParamValue resolveParameter(const ParamSpec& spec, const ParamOverrides& overrides,
                            const Getenv& getenv = processEnvironment);

/// The resolved values of every knob of one scope (the others hold their defaults).
class ParamValues {
 public:
  ParamValues();
  static ParamValues resolve(ParamScope scope, const ParamOverrides& overrides,
                             const Getenv& getenv = processEnvironment);

  const ParamValue& operator[](Param param) const { return values_[static_cast<size_t>(param)]; }
  int64_t integer(Param param) const { return (*this)[param].number; }
  bool flag(Param param) const { return (*this)[param].number != 0; }
  const std::string& text(Param param) const { return (*this)[param].text; }

 private:
  std::array<ParamValue, kParamCount> values_;
};

/// A lookup that answers from `overrides` first, then from `getenv` (for code that reads
/// variables by name, like the launch detection).
Getenv overlay(const ParamOverrides& overrides, Getenv getenv = processEnvironment);

}  // namespace grove::common
