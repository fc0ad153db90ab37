// libFuzzer target for the plan text reader (plan/reader.hpp). The reader promises never to
// crash or throw on any text, and to name the line of every error; whatever it accepts must
// print (plan/printer.hpp) to a text it reads back to the very same plan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "plan/printer.hpp"
#include "plan/reader.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  grove::Expected<grove::plan::Plan> plan = grove::plan::fromText(text);
  if (!plan) {
    require(plan.message().rfind("line ", 0) == 0);
    return 0;
  }
  std::string printed = grove::plan::toText(*plan);
  grove::Expected<grove::plan::Plan> again = grove::plan::fromText(printed);
  require(again.ok());
  require(grove::plan::toText(*again) == printed);
  return 0;
}
