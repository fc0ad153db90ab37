// Where a rank dials its peers (links_state.hpp): the address each peer published, one per
// interface (rails.hpp), or the topology's own address for the link to that peer.
#include <fmt/format.h>

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
  while (!rest.empty() && addresses.size() < static_cast<size_t>(rails)) {
    const size_t comma = rest.find(',');
    addresses.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (addresses.empty()) addresses.emplace_back();  // parsed (and refused) by the dial
  addresses.front() = dialAddress(peer, addresses.front());
  if (addresses.size() > 1) {
    log::info(options.rank, "TCP transport: rank {} striped over {} rails ({})", peer,
              addresses.size(), announced);
  }
  return addresses;
}

}  // namespace grove::transport::tcp
