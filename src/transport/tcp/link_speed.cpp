// NIC rates from sysfs (see link_speed.hpp).
#include "transport/tcp/link_speed.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <charconv>
#include <fstream>

#include "grove/error.hpp"
#include "transport/tcp/interfaces.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport::tcp {
namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

// Whether `name` is a device whose speed means something: a physical NIC or a bond.
bool physical(const std::string& dir) {
  return exists(dir + "/device") || exists(dir + "/bonding");
}

}  // namespace

int64_t interfaceSpeedMbps(std::string_view name, std::string_view sysfsNet) {
  // A name with a slash or a dot-dot would leave the directory: no interface is called so.
  if (name.empty() || name.find('/') != std::string_view::npos || name == "." || name == "..") {
    return 0;
  }
  const std::string dir = fmt::format("{}/{}", sysfsNet, name);
  if (!physical(dir)) return 0;
  std::ifstream file(dir + "/speed");
  std::string text;
  // Reading a down link's speed fails (EINVAL) on some drivers: unknown, as -1 is.
  if (!file || !std::getline(file, text)) return 0;
  int64_t mbps = 0;
  const char* end = text.data() + text.size();
  auto [rest, error] = std::from_chars(text.data(), end, mbps);
  if (error != std::errc() || (rest != end && *rest != ' ' && *rest != '\r')) return 0;
  return mbps > 0 ? mbps : 0;
}

NicSpeed nicSpeedOf(const std::vector<std::string>& names, std::string_view sysfsNet) {
  NicSpeed speed;
  if (names.empty()) {
    speed.how = "no interface";
    return speed;
  }
  int64_t total = 0;
  std::string parts;
  for (const std::string& name : names) {
    const int64_t mbps = interfaceSpeedMbps(name, sysfsNet);
    if (mbps == 0) {
      speed.how = fmt::format("{} reports no line rate: virtual, down or unknown", name);
      return speed;
    }
    total += mbps;
    parts += fmt::format("{}{} {} Mbit/s", parts.empty() ? "" : " + ", name, mbps);
  }
  speed.mbps = total;
  speed.how = fmt::format("{}, from {}", parts, sysfsNet);
  return speed;
}

NicSpeed detectNicSpeed(std::string_view spec, int rank) {
  std::vector<std::string> names;
  try {
    for (const InterfaceChoice& choice :
         chooseInterfaces(spec, rank, static_cast<size_t>(kMaxRails))) {
      names.push_back(choice.name);
    }
  } catch (const Error& error) {
    return NicSpeed{0, error.what()};
  }
  return nicSpeedOf(names);
}

}  // namespace grove::transport::tcp
