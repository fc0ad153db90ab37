// NIC rates read from sysfs (transport/tcp/link_speed.hpp), on a made-up sysfs tree: which
// devices count (physical, bonds), which do not (virtual, down, malformed), and the total
// over a host's rails.
#include "transport/tcp/link_speed.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace grove::transport {
namespace {

namespace fs = std::filesystem;

class LinkSpeed : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("grove-sysfs-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    // A physical NIC has a `device` entry (a link to its PCI device), a bond `bonding`.
    addInterface("eth0", "25000\n", "device");
    addInterface("eth1", "10000\n", "device");
    addInterface("bond0", "20000\n", "bonding");
    addInterface("veth7", "10000\n", "");           // virtual: its 10000 means nothing
    addInterface("eth2", "-1\n", "device");         // link down
    addInterface("eth3", "fast\n", "device");       // not a number
    addInterface("eth4", "1000 Mb/s\n", "device");  // trailing text
    addInterface("eth5", std::nullopt, "device");   // no speed file
  }
  void TearDown() override { fs::remove_all(root_); }

  void addInterface(const std::string& name, std::optional<std::string> speed,
                    const std::string& marker) {
    fs::create_directories(root_ / name);
    if (!marker.empty()) fs::create_directories(root_ / name / marker);
    if (speed) std::ofstream(root_ / name / "speed") << *speed;
  }
  int64_t speed(const std::string& name) { return tcp::interfaceSpeedMbps(name, root_.string()); }

  fs::path root_;
};

TEST_F(LinkSpeed, ReadsPhysicalDevicesAndBondsOnly) {
  EXPECT_EQ(speed("eth0"), 25000);
  EXPECT_EQ(speed("eth1"), 10000);
  EXPECT_EQ(speed("bond0"), 20000);
  EXPECT_EQ(speed("veth7"), 0);
  EXPECT_EQ(speed("eth2"), 0);
  EXPECT_EQ(speed("eth3"), 0);
  EXPECT_EQ(speed("eth4"), 1000);
  EXPECT_EQ(speed("eth5"), 0);
  EXPECT_EQ(speed("missing"), 0);
  EXPECT_EQ(speed(""), 0);
  EXPECT_EQ(speed(".."), 0);
  EXPECT_EQ(speed("../eth0"), 0);  // never leaves the directory
}

TEST_F(LinkSpeed, AddsTheRailsAndIsUnknownWhenAnyIs) {
  tcp::NicSpeed one = tcp::nicSpeedOf({"eth1"}, root_.string());
  EXPECT_EQ(one.mbps, 10000);
  EXPECT_EQ(one.how, "eth1 10000 Mbit/s, from " + root_.string());

  tcp::NicSpeed two = tcp::nicSpeedOf({"eth0", "eth1"}, root_.string());
  EXPECT_EQ(two.mbps, 35000);
  EXPECT_EQ(two.how, "eth0 25000 Mbit/s + eth1 10000 Mbit/s, from " + root_.string());

  tcp::NicSpeed partly = tcp::nicSpeedOf({"eth0", "veth7"}, root_.string());
  EXPECT_EQ(partly.mbps, 0);
  EXPECT_EQ(partly.how, "veth7 reports no line rate: virtual, down or unknown");

  tcp::NicSpeed none = tcp::nicSpeedOf({}, root_.string());
  EXPECT_EQ(none.mbps, 0);
  EXPECT_EQ(none.how, "no interface");
}

TEST(LinkSpeedDetect, UnknownWhenNoInterfaceMatches) {
  tcp::NicSpeed speed = tcp::detectNicSpeed("=no-such-interface-7", 3);
  EXPECT_EQ(speed.mbps, 0);
  EXPECT_NE(speed.how.find("GROVE_SOCKET_IFNAME='=no-such-interface-7'"), std::string::npos)
      << speed.how;
  EXPECT_NE(speed.how.find("rank 3"), std::string::npos) << speed.how;
}

TEST(LinkSpeedDetect, LoopbackIsUnknown) {
  tcp::NicSpeed speed = tcp::detectNicSpeed("=lo", 0);
  EXPECT_EQ(speed.mbps, 0);
  EXPECT_EQ(speed.how, "lo reports no line rate: virtual, down or unknown");
}

}  // namespace
}  // namespace grove::transport
