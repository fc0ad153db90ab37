// How fast this host's NICs are, as their drivers report it: the rate the topology built
// across hosts gives each host's link, and what GROVE_COMPRESS=auto compares with the codec,
// when GROVE_NIC_SPEED does not say (core/process_bootstrap.cpp).
//
// The source is sysfs, as for NCCL: /sys/class/net/<name>/speed, the rate the link
// negotiated, in Mbit/s. Only a physical device (one with a `device` entry) or a bond (a
// `bonding` entry: its speed is the sum of its active members) counts; a virtual interface
// (veth, bridge, tun, loopback) reports a made-up figure or none, so its rate stays unknown.
// Shaping (tc) and a slower path beyond the NIC are not seen: GROVE_NIC_SPEED says those.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grove::transport::tcp {

/// Where Linux lists network interfaces.
inline constexpr std::string_view kSysfsNet = "/sys/class/net";

/// The line rate of interface `name` in Mbit/s from `<sysfsNet>/<name>/speed`; 0 when it is
/// unknown: no such interface, a virtual one, the link down (the driver says -1), or an
/// unreadable or malformed file.
int64_t interfaceSpeedMbps(std::string_view name, std::string_view sysfsNet = kSysfsNet);

/// The rate of a host's NICs for TCP.
struct NicSpeed {
  int64_t mbps = 0;  ///< 0: unknown.
  std::string how;   ///< What it came from, or why it is unknown, for the INFO log.
};

/// The total rate of `names` (the interfaces the TCP transport uses, one per rail: a
/// connection stripes over all of them), or unknown (0) when any of them is.
NicSpeed nicSpeedOf(const std::vector<std::string>& names, std::string_view sysfsNet = kSysfsNet);

/// nicSpeedOf the interfaces GROVE_SOCKET_IFNAME=`spec` selects on this host (as the TCP
/// transport picks them, up to kMaxRails); unknown when none fits (the transport reports
/// that itself, if the job needs TCP).
NicSpeed detectNicSpeed(std::string_view spec, int rank);

}  // namespace grove::transport::tcp
