// Reading the local host's facts from sysfs (see detect.hpp for why and what).
//
// Every read is best effort: a container may hide /sys/devices/system/node, a virtual NIC
// may refuse to report its speed (reading "speed" then fails with EINVAL). Results are
// sorted so that two runs on the same host print the same text.
#include "topo/detect.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

namespace grove::topo {

namespace {

namespace fs = std::filesystem;

// The first line of a small sysfs file, without the newline; empty when unreadable.
std::string readLine(const fs::path& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return {};
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) {
    line.pop_back();
  }
  return line;
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> result;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    result.push_back(it->path());
  }
  std::sort(result.begin(), result.end());
  return result;
}

}  // namespace

HostInfo detectHost(const std::string& sysRoot) {
  HostInfo info;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) info.hostName = name;
  info.cpuCount = static_cast<int>(std::thread::hardware_concurrency());

  const fs::path root(sysRoot);
  for (const fs::path& node : entries(root / "devices/system/node")) {
    std::string base = node.filename().string();
    if (base.rfind("node", 0) != 0 || base.size() == 4) continue;
    if (!std::all_of(base.begin() + 4, base.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    info.numaNodes.push_back(NumaNode{std::stoi(base.substr(4)), readLine(node / "cpulist")});
  }
  std::sort(info.numaNodes.begin(), info.numaNodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });

  for (const fs::path& nic : entries(root / "class/net")) {
    std::string base = nic.filename().string();
    if (base == "lo") continue;
    std::string state = readLine(nic / "operstate");
    if (state == "down" || state == "lowerlayerdown" || state == "notpresent") continue;
    NicInfo entry;
    entry.name = base;
    entry.state = state.empty() ? "unknown" : state;
    std::string speed = readLine(nic / "speed");
    try {
      size_t used = 0;
      long long value = speed.empty() ? -1 : std::stoll(speed, &used);
      entry.speedMbps = value > 0 && used == speed.size() ? value : -1;
    } catch (const std::exception&) {
      entry.speedMbps = -1;
    }
    info.nics.push_back(std::move(entry));
  }
  return info;
}

std::string describeHost(const HostInfo& info) {
  std::string text = fmt::format(
      "host: {}, {} CPUs\n", info.hostName.empty() ? "(unknown)" : info.hostName, info.cpuCount);
  if (info.numaNodes.empty()) text += "NUMA nodes: not visible\n";
  for (const NumaNode& node : info.numaNodes) {
    text += fmt::format("NUMA node {}: CPUs {}\n", node.id, node.cpus.empty() ? "?" : node.cpus);
  }
  if (info.nics.empty()) text += "NICs: none up besides the loopback\n";
  for (const NicInfo& nic : info.nics) {
    std::string speed =
        nic.speedMbps > 0 ? fmt::format("{} Mbit/s", nic.speedMbps) : std::string("speed unknown");
    text += fmt::format("NIC {}: {} ({})\n", nic.name, speed, nic.state);
  }
  return text;
}

std::string describeHost() { return describeHost(detectHost()); }

}  // namespace grove::topo
