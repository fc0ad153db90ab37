// Umbrella header of the grove C++ API.
#pragma once

#include "grove/communicator.hpp"  // IWYU pragma: export
#include "grove/error.hpp"         // IWYU pragma: export
#include "grove/memory.hpp"        // IWYU pragma: export
#include "grove/options.hpp"       // IWYU pragma: export
#include "grove/types.hpp"         // IWYU pragma: export
#include "grove/version.hpp"       // IWYU pragma: export
