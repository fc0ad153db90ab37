#include "common/enforce.hpp"

namespace grove::enforce {
namespace {

/// `file` from the source root on ("src/plan/plan.cpp"): where the tree was built says
/// nothing to whoever reads the message. A header reached through a layer's include view
/// (build/layers/<layer>/<folder>/..., cmake/layers.cmake) is named by its place in src/.
std::string fromSourceRoot(std::string_view file) {
  constexpr std::string_view kView = "/layers/";
  if (size_t at = file.rfind(kView); at != std::string_view::npos) {
    std::string_view rest = file.substr(at + kView.size());
    if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
      return "src/" + std::string(rest.substr(slash + 1));
    }
  }
  for (std::string_view root : {"/src/", "/tests/", "/tools/"}) {
    if (size_t at = file.rfind(root); at != std::string_view::npos) {
      return std::string(file.substr(at + 1));
    }
  }
  return std::string(file);
}

}  // namespace

void fail(std::string_view file, int line, std::string_view condition, std::string_view values,
          const std::string& details) {
  std::string message = fmt::format("internal error at {}:{}: check '{}' failed",
                                    fromSourceRoot(file), line, condition);
  if (!values.empty()) message += fmt::format(" {}", values);
  if (!details.empty()) message += fmt::format(": {}", details);
  throw Error(ErrorCode::kInternalError, message);
}

}  // namespace grove::enforce
