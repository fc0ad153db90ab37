// grove::Options: knobs set from code, checked against the parameter table exactly as the
// environment's values are.
#include "grove/options.hpp"

#include <fmt/format.h>

#include "common/parameters.hpp"
#include "grove/error.hpp"

namespace grove {

Options& Options::set(std::string_view name, std::string_view value) {
  const common::ParamSpec* spec = common::findParameter(name);
  if (spec == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove Options: '{}' is not a grove knob (expected one of the "
                            "GROVE_* names that `grove config` lists)",
                            name));
  }
  if (spec->scope == common::ParamScope::kProcess) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("grove Options: {} is read once per process, from the environment "
                            "only (expected it in the environment)",
                            name));
  }
  if (value.empty()) {
    values_.erase(std::string(name));
    return *this;
  }
  common::parseParameter(*spec, value, common::ParamSource::kCode);  // Throws when malformed.
  values_[std::string(name)] = std::string(value);
  return *this;
}

std::optional<std::string> Options::get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Options::names() {
  std::vector<std::string> names;
  for (const common::ParamSpec& spec : common::kParameters) names.emplace_back(spec.name);
  return names;
}

}  // namespace grove
