// Which network interfaces the TCP transport listens on, chosen with NCCL's rules so that a
// GROVE_SOCKET_IFNAME written for NCCL_SOCKET_IFNAME means the same thing.
//
// The choice is a pure function of the interface list (tested on made-up lists); only
// listInterfaces() asks the operating system.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grove::transport::tcp {

/// One network interface as the operating system reports it.
struct NetInterface {
  std::string name;
  std::vector<std::string> addresses;  ///< Numeric IPv4 / IPv6 addresses, in system order.
  bool up = false;
  bool loopback = false;
};

/// The interface and address to listen on.
struct InterfaceChoice {
  std::string name;
  std::string address;  ///< Numeric, without brackets ("10.0.0.1", "fd00::2").
};

/// A parsed GROVE_SOCKET_IFNAME: comma-separated names; a leading `^` excludes the listed
/// interfaces instead of selecting them; a leading `=` (after any `^`) makes the names exact
/// instead of prefixes. Empty = automatic.
struct InterfaceFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  static InterfaceFilter parse(std::string_view spec);
  /// Whether an interface called `name` passes the filter.
  bool accepts(std::string_view name) const;
};

/// Picks the interface per `spec` (NCCL syntax; see InterfaceFilter). Only interfaces that
/// are up and have a usable address count (IPv6 link-local addresses are not usable: they
/// need a scope). Automatic (empty spec): the first such non-loopback interface, else the
/// first loopback one. With a spec: the first accepted interface, loopback included. Within
/// an interface an IPv4 address is preferred to an IPv6 one. nullopt when nothing fits.
std::optional<InterfaceChoice> pickInterface(const std::vector<NetInterface>& interfaces,
                                             std::string_view spec);

/// Every interface `spec` selects, up to `most`, in system order (as NCCL lists them): the
/// first is pickInterface's choice, each further one a rail of every connection (rails.hpp).
/// Automatic (empty spec) selects one interface only: a host's other interfaces may not
/// reach the peers (a management network), so several NICs are used when named. A loopback
/// interface is never a further one, and a loopback first one gets no further ones.
std::vector<InterfaceChoice> pickInterfaces(const std::vector<NetInterface>& interfaces,
                                            std::string_view spec, size_t most);

/// The interfaces of this host (getifaddrs), in system order.
std::vector<NetInterface> listInterfaces();

/// pickInterface(listInterfaces(), spec), throwing grove::Error(kInvalidArgument) that names
/// GROVE_SOCKET_IFNAME, the rank and the interfaces seen when nothing fits.
InterfaceChoice chooseInterface(std::string_view spec, int rank);

/// pickInterfaces(listInterfaces(), spec, most), throwing as chooseInterface when nothing fits.
std::vector<InterfaceChoice> chooseInterfaces(std::string_view spec, int rank, size_t most);

}  // namespace grove::transport::tcp
