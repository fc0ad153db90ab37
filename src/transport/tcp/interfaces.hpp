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
  /// The prefix length (netmask bits) of each address, index for index; missing or -1:
  /// unknown (such an interface is never matched to a peer's subnet for a rail).
  std::vector<int> prefixes = {};
};

/// The interface and address to listen on.
struct InterfaceChoice {
  std::string name;
  std::string address;  ///< Numeric, without brackets ("10.0.0.1", "fd00::2").
  int prefix = -1;      ///< The address's prefix length; -1: unknown.
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
/// need a scope). Automatic (empty spec) as NCCL without NCCL_SOCKET_IFNAME: the first `ib`
/// interface, else the first that is neither `docker*` nor `lo*`, else a docker one, else a
/// loopback one. With a spec: the first accepted interface, loopback included. Within an
/// interface an IPv4 address is preferred to an IPv6 one. nullopt when nothing fits.
std::optional<InterfaceChoice> pickInterface(const std::vector<NetInterface>& interfaces,
                                             std::string_view spec);

/// Every interface `spec` selects, up to `most`, in system order (as NCCL lists them): the
/// first is pickInterface's choice, each further one a rail (rails.hpp). Automatic (empty
/// spec): every interface of the first of NCCL's automatic classes that has one (`ib`, then
/// neither docker nor loopback, then docker), as NCCL's socket transport uses them all;
/// which of them a connection to a given peer stripes over is then decided per peer by
/// subnet (matchRails). A loopback interface is never a further one, and a loopback first
/// one gets no further ones.
std::vector<InterfaceChoice> pickInterfaces(const std::vector<NetInterface>& interfaces,
                                            std::string_view spec, size_t most);

/// Whether numeric address `address` lies in the subnet of `network`/`prefix` (both IPv4
/// or both IPv6; false for mixed families, malformed text or an unknown prefix).
bool sameSubnet(const std::string& address, const std::string& network, int prefix);

/// Automatic rails: which further addresses a peer published (`peer`, numeric, its primary
/// first) this rank dials as rails 1, 2, ... For each further interface of this rank
/// (`mine[1..]`, in order) the first unused address of `peer[1..]` on that interface's
/// subnet, unless it is on the primary's subnet too (both would leave by one route), or is an
/// address of this host (`local`: the peer runs here, or a bridge every host has with the
/// same address, such as docker0's). Why by subnet: an interface whose subnet holds no
/// address of the peer's does not reach it directly (a management network), and a rail that
/// the kernel would route through another interface adds a socket but no link. A pure
/// function.
std::vector<std::string> matchRails(const std::vector<InterfaceChoice>& mine,
                                    const std::vector<std::string>& peer,
                                    const std::vector<std::string>& local);

/// The interfaces of this host (getifaddrs), in system order.
std::vector<NetInterface> listInterfaces();

/// pickInterface(listInterfaces(), spec), throwing grove::Error(kInvalidArgument) that names
/// GROVE_SOCKET_IFNAME, the rank and the interfaces seen when nothing fits.
InterfaceChoice chooseInterface(std::string_view spec, int rank);

/// pickInterfaces(listInterfaces(), spec, most), throwing as chooseInterface when nothing fits.
std::vector<InterfaceChoice> chooseInterfaces(std::string_view spec, int rank, size_t most);

}  // namespace grove::transport::tcp
