// libFuzzer target for the topology JSON reader (topo/topology.hpp, GROVE_TOPO_FILE). The
// reader may only throw grove::Error(kInvalidArgument) — never a JSON library exception, a
// crash or another code — and what it accepts must be valid and survive toJson/readJson.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "grove/error.hpp"
#include "topo/topology.hpp"

namespace {

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "topo_json_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  grove::topo::Topology topology;
  try {
    topology = grove::topo::readJson(text, "fuzz");
  } catch (const grove::Error& error) {
    require(error.code() == grove::ErrorCode::kInvalidArgument,
            "readJson threw a grove::Error other than kInvalidArgument");
    return 0;
  }
  // Anything else thrown escapes to libFuzzer, which reports it as a crash.
  topology.validate();
  std::string json = grove::topo::toJson(topology);
  grove::topo::Topology again = grove::topo::readJson(json, "toJson output");
  require(grove::topo::toJson(again) == json, "readJson(toJson(t)) differs from t");
  return 0;
}
