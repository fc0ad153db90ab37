// NCCL-compatible interface selection (see interfaces.hpp).
#include "transport/tcp/interfaces.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <bit>

#include "grove/error.hpp"

namespace grove::transport::tcp {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool isIpv4(const std::string& address) { return address.find(':') == std::string::npos; }

bool isLinkLocalIpv6(const std::string& address) {
  if (isIpv4(address) || address.size() < 4) return false;
  std::string head = address.substr(0, 4);
  std::transform(head.begin(), head.end(), head.begin(), [](char c) { return char(c | 0x20); });
  return head == "fe80";
}

/// The address to listen on for `interface` (with its prefix length): its first IPv4
/// address, else its first IPv6 address that is not link-local, else nothing.
std::optional<InterfaceChoice> usableAddress(const NetInterface& interface) {
  auto choice = [&](size_t i) {
    return InterfaceChoice{interface.name, interface.addresses[i],
                           i < interface.prefixes.size() ? interface.prefixes[i] : -1};
  };
  for (size_t i = 0; i < interface.addresses.size(); ++i) {
    if (isIpv4(interface.addresses[i])) return choice(i);
  }
  for (size_t i = 0; i < interface.addresses.size(); ++i) {
    if (!isLinkLocalIpv6(interface.addresses[i])) return choice(i);
  }
  return std::nullopt;
}

/// An address as its bytes (4 or 16), empty when it is not numeric.
std::vector<unsigned char> addressBytes(const std::string& text) {
  std::vector<unsigned char> bytes(16);
  if (inet_pton(AF_INET, text.c_str(), bytes.data()) == 1) {
    bytes.resize(4);
  } else if (inet_pton(AF_INET6, text.c_str(), bytes.data()) != 1) {
    bytes.clear();
  }
  return bytes;
}

/// The bits set in the netmask of an address of `family` (-1 when there is none).
int prefixLength(const sockaddr* mask, int family) {
  if (mask == nullptr) return -1;
  const unsigned char* bytes = nullptr;
  size_t size = 0;
  if (family == AF_INET) {
    bytes = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    size = 4;
  } else if (family == AF_INET6) {
    bytes = reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr.s6_addr;
    size = 16;
  } else {
    return -1;
  }
  int bits = 0;
  for (size_t i = 0; i < size; ++i) bits += std::popcount(bytes[i]);
  return bits;
}

/// NCCL's automatic classes, tried in order until one selects an interface.
constexpr std::string_view kAutomaticClasses[] = {"ib", "^docker,lo", "docker", "lo"};

}  // namespace

InterfaceFilter InterfaceFilter::parse(std::string_view spec) {
  InterfaceFilter filter;
  spec = trim(spec);
  if (!spec.empty() && spec.front() == '^') {
    filter.exclude = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    filter.exact = true;
    spec.remove_prefix(1);
  }
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = trim(spec.substr(0, comma));
    if (!item.empty()) filter.names.emplace_back(item);
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return filter;
}

bool InterfaceFilter::accepts(std::string_view name) const {
  bool listed = std::any_of(names.begin(), names.end(), [&](const std::string& item) {
    return exact ? name == item : name.substr(0, item.size()) == item;
  });
  return exclude ? !listed : listed;
}

std::optional<InterfaceChoice> pickInterface(const std::vector<NetInterface>& interfaces,
                                             std::string_view spec) {
  std::vector<InterfaceChoice> chosen = pickInterfaces(interfaces, spec, 1);
  if (chosen.empty()) return std::nullopt;
  return chosen.front();
}

std::vector<InterfaceChoice> pickInterfaces(const std::vector<NetInterface>& interfaces,
                                            std::string_view spec, size_t most) {
  std::vector<InterfaceChoice> chosen;
  if (most == 0) return chosen;
  if (trim(spec).empty()) {
    for (std::string_view automatic : kAutomaticClasses) {
      chosen = pickInterfaces(interfaces, automatic, most);
      if (!chosen.empty()) return chosen;
    }
    return chosen;
  }
  InterfaceFilter filter = InterfaceFilter::parse(spec);
  bool firstIsLoopback = false;
  for (const NetInterface& interface : interfaces) {
    if (!interface.up || !filter.accepts(interface.name)) continue;
    // A loopback interface reaches no other host: never a rail, and a loopback first choice
    // (every rank on this host) gets none.
    if (!chosen.empty() && (interface.loopback || firstIsLoopback)) continue;
    if (auto usable = usableAddress(interface)) {
      if (chosen.empty()) firstIsLoopback = interface.loopback;
      chosen.push_back(*usable);
      if (chosen.size() == most) break;
    }
  }
  return chosen;
}

bool sameSubnet(const std::string& address, const std::string& network, int prefix) {
  const std::vector<unsigned char> a = addressBytes(address);
  const std::vector<unsigned char> n = addressBytes(network);
  if (a.empty() || a.size() != n.size() || prefix < 0 || prefix > int(8 * a.size())) {
    return false;
  }
  for (int bit = 0; bit < prefix; ++bit) {
    const unsigned char mask = static_cast<unsigned char>(0x80u >> (bit % 8));
    if ((a[size_t(bit / 8)] & mask) != (n[size_t(bit / 8)] & mask)) return false;
  }
  return true;
}

std::vector<std::string> matchRails(const std::vector<InterfaceChoice>& mine,
                                    const std::vector<std::string>& peer,
                                    const std::vector<std::string>& local) {
  std::vector<std::string> rails;
  if (mine.empty()) return rails;
  std::vector<bool> used(peer.size(), false);
  for (size_t i = 1; i < mine.size(); ++i) {
    for (size_t j = 1; j < peer.size(); ++j) {
      const std::string& address = peer[j];
      if (used[j] || !sameSubnet(address, mine[i].address, mine[i].prefix) ||
          sameSubnet(address, mine[0].address, mine[0].prefix) ||
          std::find(local.begin(), local.end(), address) != local.end()) {
        continue;
      }
      used[j] = true;
      rails.push_back(address);
      break;
    }
  }
  return rails;
}

std::vector<NetInterface> listInterfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    throw Error(ErrorCode::kSystemError, fmt::format("getifaddrs failed: errno {}", errno));
  }
  std::vector<NetInterface> interfaces;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_name == nullptr) continue;
    auto found = std::find_if(interfaces.begin(), interfaces.end(),
                              [&](const NetInterface& i) { return i.name == entry->ifa_name; });
    if (found == interfaces.end()) {
      interfaces.push_back(NetInterface{entry->ifa_name, {}, false, false, {}});
      found = interfaces.end() - 1;
    }
    found->up = found->up || (entry->ifa_flags & IFF_UP) != 0;
    found->loopback = found->loopback || (entry->ifa_flags & IFF_LOOPBACK) != 0;
    if (entry->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    int family = entry->ifa_addr->sa_family;
    if (family == AF_INET) {
      auto* in = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    } else if (family == AF_INET6) {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    } else {
      continue;
    }
    found->addresses.emplace_back(text);
    found->prefixes.push_back(prefixLength(entry->ifa_netmask, family));
  }
  freeifaddrs(list);
  return interfaces;
}

InterfaceChoice chooseInterface(std::string_view spec, int rank) {
  return chooseInterfaces(spec, rank, 1).front();
}

std::vector<InterfaceChoice> chooseInterfaces(std::string_view spec, int rank, size_t most) {
  std::vector<NetInterface> interfaces = listInterfaces();
  std::vector<InterfaceChoice> chosen = pickInterfaces(interfaces, spec, std::max<size_t>(most, 1));
  if (!chosen.empty()) return chosen;
  std::string seen;
  for (const NetInterface& interface : interfaces) {
    seen += fmt::format("{}{} ({}{})", seen.empty() ? "" : ", ", interface.name,
                        interface.up ? "up" : "down",
                        interface.addresses.empty() ? ", no address" : "");
  }
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("TCP transport, rank {}: no network interface matches "
                          "GROVE_SOCKET_IFNAME='{}' (need one that is up with an address; "
                          "interfaces: {})",
                          rank, spec, seen.empty() ? "none" : seen));
}

}  // namespace grove::transport::tcp
