// Where a rank dials its peers (links_state.hpp): the address each peer published, one per
// interface (rails.hpp), or the topology's own address for the link to that peer. Named
// interfaces (GROVE_SOCKET_IFNAME) pair up by position; found ones by subnet (matchRails).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.hpp"
#include "common/socket.hpp"
#include "transport/tcp/links_state.hpp"

namespace grove::transport::tcp {

std::string LinksState::dialAddress(int peer, const std::string& announced) const {
  if (options.linkAddresses.empty()) return announced;
  const std::string& link = options.linkAddresses[static_cast<size_t>(peer)];
  std::string chosen = announced;
  if (!link.empty()) {
    chosen =
        net::formatHostPort(link, net::parseHostPort(announced, "a published TCP address").port);
  }
  log::info(options.rank, "TCP transport: rank {} via {} ({})", peer, chosen,
            link.empty() ? "published address: the topology names no link of its own"
                         : "the topology's link address");
  return chosen;
}

std::vector<std::string> LinksState::railAddresses(int peer, const std::string& announced) const {
  std::vector<std::string> addresses;
  std::string_view rest = announced;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    addresses.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (addresses.empty()) addresses.emplace_back();  // parsed (and refused) by the dial
  if (automaticRails && addresses.size() > 1 && rails > 1) {
    // Matched by subnet: the peer's further interfaces that this rank's further ones reach.
    std::vector<std::string> hosts;
    std::vector<uint16_t> ports;
    for (const std::string& item : addresses) {
      net::HostPort parsed = net::parseHostPort(item, "a published TCP address");
      hosts.push_back(parsed.host);
      ports.push_back(parsed.port);
    }
    std::vector<std::string> matched = matchRails(railInterfaces, hosts, localAddresses);
    addresses.resize(1);
    for (const std::string& host : matched) {
      const size_t at =
          static_cast<size_t>(std::find(hosts.begin(), hosts.end(), host) - hosts.begin());
      addresses.push_back(net::formatHostPort(host, ports[at]));
    }
    if (matched.empty()) {
      log::info(options.rank,
                "TCP transport: rank {} published {} but no further interface of this rank "
                "shares a subnet with them: no rails to it",
                peer, announced);
    }
  } else if (addresses.size() > static_cast<size_t>(rails)) {
    addresses.resize(static_cast<size_t>(rails));  // named interfaces pair up by position
  }
  addresses.front() = dialAddress(peer, addresses.front());
  if (addresses.size() > 1) {
    log::info(options.rank, "TCP transport: rank {} striped over {} rails ({})", peer,
              addresses.size(), announced);
  }
  return addresses;
}

}  // namespace grove::transport::tcp
