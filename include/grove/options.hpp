// Settings of a communicator set from code: the same knobs as the GROVE_* environment
// variables (README.md lists them, `grove config` shows their current values).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grove {

/// Knobs for the communicators made with it, by the environment variable's name:
///
///   grove::Options options;
///   options.set("GROVE_TIMEOUT", "30").set("GROVE_ALGO", "ring");
///   auto comms = grove::Communicator::createInProcess(4, options);
///
/// A value set here wins over the environment, which wins over the default. set() checks
/// the value exactly as the environment's is checked and throws grove::Error
/// (kInvalidArgument) naming the knob, the value and what was expected; an unknown name is
/// refused the same way. Communicators made by split() and shrink() keep their parent's
/// settings. Every knob of a communicator may be set, and so may those fromEnv reads to find
/// its job (GROVE_ROOT, GROVE_STORE, GROVE_SECRET, GROVE_RANK, ...); GROVE_DEBUG and
/// GROVE_DEBUG_FILE are read once per process, from the environment only, and are refused.
class Options {
 public:
  /// Sets knob `name` ("GROVE_TIMEOUT") to `value` as the environment would spell it ("30");
  /// an empty value removes what was set (the environment and default apply again).
  Options& set(std::string_view name, std::string_view value);
  /// The value set for `name`, if any.
  std::optional<std::string> get(std::string_view name) const;
  /// Everything set, by name.
  const std::map<std::string, std::string, std::less<>>& values() const { return values_; }

  /// The names of every knob, in the order README.md lists them.
  static std::vector<std::string> names();

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace grove
