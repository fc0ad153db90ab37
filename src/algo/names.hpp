// Spelling of algorithm names: case folding and the aliases users know from
// NCCL ("tree") and from the literature ("rd"). Shared by lookup (registry.cpp)
// and selection (select.cpp).
#pragma once

#include <string>
#include <string_view>

#include "plan/plan.hpp"

namespace grove::algo {

/// `text` in lower case (ASCII).
std::string lowerCase(std::string_view text);

/// The registered name `name` stands for when used for `collective`:
/// lower-cased, with "rd" → "recursive_doubling" and "tree" →
/// "double_binary_tree" (allreduce) or "binomial_tree" (broadcast, reduce).
/// Other names are returned lower-cased.
std::string canonicalName(plan::Collective collective, std::string_view name);

}  // namespace grove::algo
