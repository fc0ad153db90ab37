// NCCL-compatible interface selection (see interfaces.hpp).
#include "transport/tcp/interfaces.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>

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

/// The address to listen on for `interface`: its first IPv4 address, else its first IPv6
/// address that is not link-local, else nothing.
std::optional<std::string> usableAddress(const NetInterface& interface) {
  for (const std::string& address : interface.addresses) {
    if (isIpv4(address)) return address;
  }
  for (const std::string& address : interface.addresses) {
    if (!isLinkLocalIpv6(address)) return address;
  }
  return std::nullopt;
}

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
    for (bool wantLoopback : {false, true}) {
      for (const NetInterface& interface : interfaces) {
        if (!interface.up || interface.loopback != wantLoopback) continue;
        if (auto address = usableAddress(interface)) {
          chosen.push_back(InterfaceChoice{interface.name, *address});
          return chosen;
        }
      }
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
    if (auto address = usableAddress(interface)) {
      if (chosen.empty()) firstIsLoopback = interface.loopback;
      chosen.push_back(InterfaceChoice{interface.name, *address});
      if (chosen.size() == most) break;
    }
  }
  return chosen;
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
      interfaces.push_back(NetInterface{entry->ifa_name, {}, false, false});
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
