#include "common/parameters.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "grove/error.hpp"

namespace grove::common {
namespace {

bool equalIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view origin(ParamSource source) {
  switch (source) {
    case ParamSource::kCode:
      return "set from code";
    case ParamSource::kEnvironment:
      return "set in the environment";
    case ParamSource::kDefault:
      break;
  }
  return "the default";
}

[[noreturn]] void reject(const ParamSpec& spec, std::string_view text, ParamSource source) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("grove: {}='{}' ({}) is not valid; expected {}", spec.name,
                          spec.secret ? "(secret)" : text, origin(source), describeExpected(spec)));
}

}  // namespace

const ParamSpec* findParameter(std::string_view name) {
  for (const ParamSpec& spec : kParameters) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string_view toString(ParamSource source) {
  switch (source) {
    case ParamSource::kCode:
      return "code";
    case ParamSource::kEnvironment:
      return "environment";
    case ParamSource::kDefault:
      break;
  }
  return "default";
}

const char* processEnvironment(const char* name) { return std::getenv(name); }

std::string describeExpected(const ParamSpec& spec) {
  switch (spec.kind) {
    case ParamKind::kInteger: {
      std::string what =
          spec.unit.empty() ? "an integer" : fmt::format("an integer ({})", spec.unit);
      what += fmt::format(" in [{}, {}]", spec.min, spec.max);
      if (spec.multipleOf > 1) what += fmt::format(", a multiple of {}", spec.multipleOf);
      return what;
    }
    case ParamKind::kBoolean:
      return "0 or 1";
    case ParamKind::kEnum: {
      std::string what = "one of ";
      std::string_view rest = spec.choices;
      for (bool first = true; !rest.empty(); first = false) {
        size_t bar = rest.find('|');
        what += fmt::format("{}{}", first ? "" : ", ", rest.substr(0, bar));
        rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
      }
      return what;
    }
    case ParamKind::kString:
      break;
  }
  return "any text";
}

ParamValue parseParameter(const ParamSpec& spec, std::string_view text, ParamSource source) {
  if (text.empty()) {
    if (spec.fallback.empty()) return ParamValue{};
    return parseParameter(spec, spec.fallback, ParamSource::kDefault);
  }
  ParamValue value{std::string(text), 0, source};
  switch (spec.kind) {
    case ParamKind::kInteger:
    case ParamKind::kBoolean: {
      const int64_t min = spec.kind == ParamKind::kBoolean ? 0 : spec.min;
      const int64_t max = spec.kind == ParamKind::kBoolean ? 1 : spec.max;
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value.number);
      if (error != std::errc() || end != text.data() + text.size() || value.number < min ||
          value.number > max || (spec.multipleOf > 1 && value.number % spec.multipleOf != 0)) {
        reject(spec, text, source);
      }
      return value;
    }
    case ParamKind::kEnum: {
      std::string_view rest = spec.choices;
      for (int64_t index = 0; !rest.empty(); ++index) {
        size_t bar = rest.find('|');
        std::string_view choice = rest.substr(0, bar);
        if (equalIgnoringCase(choice, text)) {
          value.text = std::string(choice);
          value.number = index;
          return value;
        }
        rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
      }
      reject(spec, text, source);
    }
    case ParamKind::kString:
      break;
  }
  return value;
}

ParamValue resolveParameter(const ParamSpec& spec, const ParamOverrides& overrides,
                            const Getenv& getenv) {
  if (auto it = overrides.find(spec.name); it != overrides.end() && !it->second.empty()) {
    return parseParameter(spec, it->second, ParamSource::kCode);
  }
  const char* text = getenv(std::string(spec.name).c_str());
  return parseParameter(spec, text != nullptr ? text : "", ParamSource::kEnvironment);
}

ParamValues::ParamValues() {
  for (size_t i = 0; i < kParamCount; ++i) {
    values_[i] = parseParameter(kParameters[i], "", ParamSource::kDefault);
  }
}

ParamValues ParamValues::resolve(ParamScope scope, const ParamOverrides& overrides,
                                 const Getenv& getenv) {
  ParamValues values;
  for (size_t i = 0; i < kParamCount; ++i) {
    if (kParameters[i].scope == scope) {
      values.values_[i] = resolveParameter(kParameters[i], overrides, getenv);
    }
  }
  return values;
}

Getenv overlay(const ParamOverrides& overrides, Getenv getenv) {
  return [overrides, getenv = std::move(getenv)](const char* name) -> const char* {
    if (auto it = overrides.find(std::string_view(name)); it != overrides.end()) {
      return it->second.c_str();
    }
    return getenv(name);
  };
}

}  // namespace grove::common
