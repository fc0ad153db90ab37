#include "core/config.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "grove/error.hpp"

namespace grove::detail {
namespace {

// Parses an unsigned decimal environment variable in [min, max]; unset keeps `fallback`.
uint64_t readNumber(const char* name, uint64_t fallback, uint64_t min, uint64_t max) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  std::string_view view(text);
  uint64_t value = 0;
  auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (error != std::errc() || end != view.data() + view.size() || value < min || value > max) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("grove: environment variable ") + name + "='" + text +
                    "' is not valid; expected an integer in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
  }
  return value;
}

}  // namespace

Config Config::fromEnvironment() {
  Config config;
  if (const char* algo = getenv("GROVE_ALGO")) config.algo = algo;
  if (const char* topo = getenv("GROVE_TOPO_FILE")) config.topoFile = topo;
  config.timeout = std::chrono::seconds(readNumber("GROVE_TIMEOUT", 300, 1, 86400 * 7));
  // At least 2 s (1 is taken as 2): heartbeats go out after 1 s of silence.
  const uint64_t heartbeat = readNumber("GROVE_HEARTBEAT_TIMEOUT", 10, 0, 86400 * 7);
  config.heartbeatTimeout = std::chrono::seconds(heartbeat == 1 ? 2 : heartbeat);
  config.slotBytes = readNumber("GROVE_SLOT_BYTES", config.slotBytes, 4096, 64u << 20);
  if (config.slotBytes % 64 != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "grove: GROVE_SLOT_BYTES must be a multiple of 64, got " +
                    std::to_string(config.slotBytes));
  }
  config.fifoDepth = static_cast<uint32_t>(readNumber("GROVE_FIFO_DEPTH", 4, 2, 64));
  if (const char* spin = getenv("GROVE_SPIN_US"); spin != nullptr && *spin != '\0') {
    config.spin = std::chrono::microseconds(readNumber("GROVE_SPIN_US", 0, 0, 1'000'000));
  }
  config.verifyPlans = readNumber("GROVE_VERIFY", 0, 0, 1) == 1;
  config.requireSecret = readNumber("GROVE_REQUIRE_SECRET", 0, 0, 1) == 1;
  config.checkSignatures = readNumber("GROVE_CHECK", 0, 0, 1) == 1;
  config.checksum = readNumber("GROVE_CHECKSUM", 0, 0, 1) == 1;
  config.faultDelay =
      std::chrono::microseconds(readNumber("GROVE_FAULT_DELAY_US", 0, 0, 60'000'000));
  if (const char* rank = getenv("GROVE_FAULT_RANK"); rank != nullptr && *rank != '\0') {
    config.faultRank = static_cast<int>(readNumber("GROVE_FAULT_RANK", 0, 0, 1u << 30));
  }
  const uint64_t direct = readNumber("GROVE_DIRECT", 1, 0, 2);
  config.direct = direct >= 1;
  config.directCopies = direct == 2;
  config.directMinBytes =
      readNumber("GROVE_DIRECT_MIN_BYTES", config.directMinBytes, 1, uint64_t{1} << 50);
  if (const char* trace = getenv("GROVE_TRACE")) config.tracePath = trace;
  config.traceSteps = readNumber("GROVE_TRACE_STEPS", config.traceSteps, 1, 1u << 26);
  return config;
}

}  // namespace grove::detail
