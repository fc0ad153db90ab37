// Logging in NCCL's shape: GROVE_DEBUG=WARN|INFO|TRACE selects the level (default: WARN),
// GROVE_DEBUG_FILE=PATH sends lines to a file (%h = host, %p = pid) instead of stderr.
// Lines read "host:pid:tid [rank] GROVE INFO message".
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace grove::log {

enum class Level { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

/// The level from GROVE_DEBUG, read once per process.
Level level();

/// True when messages of `at` are printed.
inline bool enabled(Level at) { return static_cast<int>(at) <= static_cast<int>(level()); }

/// Writes one line (rank < 0 prints no rank).
void write(Level at, int rank, std::string_view message);

template <class... Args>
void info(int rank, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::kInfo))
    write(Level::kInfo, rank, fmt::format(format, std::forward<Args>(args)...));
}

template <class... Args>
void warn(int rank, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::kWarn))
    write(Level::kWarn, rank, fmt::format(format, std::forward<Args>(args)...));
}

template <class... Args>
void trace(int rank, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::kTrace))
    write(Level::kTrace, rank, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace grove::log
