// The TCP transport's pure parts: which interfaces it listens on (NCCL's rules, and which of
// them become rails) and the bytes of its wire (frame header and hello layouts, hello checks).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "grove/error.hpp"
#include "transport/tcp/handshake.hpp"
#include "transport/tcp/interfaces.hpp"
#include "transport/tcp/wire.hpp"

namespace grove::transport {
namespace {

std::vector<tcp::NetInterface> sampleInterfaces() {
  return {
      {"lo", {"127.0.0.1", "::1"}, true, true},         {"docker0", {"172.17.0.1"}, true, false},
      {"eth0", {"fe80::1", "fd00::2"}, true, false},    {"eth1", {"10.0.0.5"}, false, false},
      {"ib0", {"fe80::7", "192.168.1.9"}, true, false}, {"ib1", {"fe80::9"}, true, false},
  };
}

std::string pick(std::string_view spec, const std::vector<tcp::NetInterface>& list) {
  auto choice = tcp::pickInterface(list, spec);
  return choice ? choice->name + " " + choice->address : "none";
}

TEST(TcpInterfaces, PicksPerTheNcclRules) {
  auto list = sampleInterfaces();
  EXPECT_EQ(pick("", list), "ib0 192.168.1.9");    // automatic: ib first, as NCCL
  EXPECT_EQ(pick("eth", list), "eth0 fd00::2");    // eth1 is down; link-local skipped
  EXPECT_EQ(pick("ib", list), "ib0 192.168.1.9");  // IPv4 preferred within an interface
  EXPECT_EQ(pick("=ib", list), "none");            // exact names only
  EXPECT_EQ(pick("=ib1,ib0", list), "ib0 192.168.1.9");
  EXPECT_EQ(pick("=ib1", list), "none");  // only a link-local address
  EXPECT_EQ(pick("^docker,lo", list), "eth0 fd00::2");
  EXPECT_EQ(pick("^=eth0,docker0", list), "lo 127.0.0.1");
  EXPECT_EQ(pick(" lo ", list), "lo 127.0.0.1");
  EXPECT_EQ(pick("wlan", list), "none");
  // Without ib: neither docker nor loopback, then docker, then loopback.
  EXPECT_EQ(pick("", {list[0], list[1], list[2]}), "eth0 fd00::2");
  EXPECT_EQ(pick("", {list[0], list[1]}), "docker0 172.17.0.1");
  std::vector<tcp::NetInterface> loopbackOnly = {list[0], list[3]};
  EXPECT_EQ(pick("", loopbackOnly), "lo 127.0.0.1");
  EXPECT_EQ(pick("", {}), "none");
  tcp::InterfaceFilter filter = tcp::InterfaceFilter::parse("^=a, b,,c");
  EXPECT_TRUE(filter.exclude);
  EXPECT_TRUE(filter.exact);
  EXPECT_EQ(filter.names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(filter.accepts("b"));
  EXPECT_TRUE(filter.accepts("bb"));
}

TEST(TcpInterfaces, ThisHostHasLoopback) {
  EXPECT_EQ(tcp::chooseInterface("lo", 0).address, "127.0.0.1");
  EXPECT_THROW(tcp::chooseInterface("=nope0", 3), Error);
}

TEST(TcpWire, FramesAndHellosEncodeLittleEndian) {
  tcp::FrameHeader header;
  header.lane = 0x0102;
  header.kind = 1;
  header.bytes = 0x0a0b0c0d;
  header.tag.call = 0x1122;
  header.tag.count = 0x33445566;
  header.tag.checksum = 0xdeadbeef;
  header.tag.root = -1;
  header.tag.algorithm = 0x01020304;
  header.tag.collective = 3;
  header.tag.type = 7;
  header.tag.op = 4;
  header.tag.flags = 1;
  header.railBytes[0] = 0x1000;
  header.railBytes[2] = 0x20000;
  static_assert(tcp::FrameHeader::kBytes == 64);
  unsigned char bytes[tcp::FrameHeader::kBytes];
  header.encode(bytes);
  const unsigned char expected[tcp::FrameHeader::kBytes] = {
      0x54, 0x46, 0x52, 0x47, 0x02, 0x01, 0x01, 0x00,  // magic, lane, kind
      0x0d, 0x0c, 0x0b, 0x0a, 0,    0,    0,    0,     // bytes
      0x22, 0x11, 0,    0,    0,    0,    0,    0,     // call
      0x66, 0x55, 0x44, 0x33, 0,    0,    0,    0,     // count
      0xef, 0xbe, 0xad, 0xde, 0xff, 0xff, 0xff, 0xff,  // checksum, root
      0x04, 0x03, 0x02, 0x01, 3,    7,    4,    1,     // algorithm, collective, type, op, flags
      0,    0x10, 0,    0,    0,    0,    0,    0,     // rail 1, rail 2
      0,    0,    0x02, 0,    0,    0,    0,    0};    // rail 3, reserved
  EXPECT_EQ(std::memcmp(bytes, expected, sizeof expected), 0);
  tcp::FrameHeader back = tcp::FrameHeader::decode(bytes);
  EXPECT_EQ(back.lane, 0x0102);
  EXPECT_EQ(back.bytes, 0x0a0b0c0du);
  EXPECT_TRUE(back.tag.sameCall(header.tag));
  EXPECT_EQ(back.tag.checksum, 0xdeadbeefu);
  EXPECT_EQ(back.tag.flags, 1);
  EXPECT_EQ(back.railBytes[0], 0x1000u);
  EXPECT_EQ(back.railBytes[1], 0u);
  EXPECT_EQ(back.railBytes[2], 0x20000u);
  EXPECT_EQ(back.railTotal(), 0x21000u);

  tcp::HelloPolicy policy{4, {1, 7}, 2, 4096, 2};
  tcp::Hello hello;
  hello.src = 7;
  hello.dst = 4;
  hello.stream = 1;
  hello.slotBytes = 4096;
  hello.rail = 1;
  static_assert(tcp::Hello::kBytes == 28);
  unsigned char helloBytes[tcp::Hello::kBytes];
  hello.encode(helloBytes);
  EXPECT_EQ(helloBytes[24], 1);  // rail, little-endian
  EXPECT_EQ(helloBytes[25], 0);
  tcp::Hello decoded = tcp::Hello::decode(helloBytes);
  EXPECT_EQ(decoded.rail, 1);
  EXPECT_EQ(tcp::checkHello(decoded, policy), tcp::HelloStatus::kAccepted);
  auto with = [&](auto change) {
    tcp::Hello copy = hello;
    change(copy);
    return tcp::checkHello(copy, policy);
  };
  EXPECT_EQ(with([](auto& h) { h.version = 9; }), tcp::HelloStatus::kBadVersion);
  EXPECT_EQ(with([](auto& h) { h.dst = 1; }), tcp::HelloStatus::kWrongDestination);
  EXPECT_EQ(with([](auto& h) { h.src = 4; }), tcp::HelloStatus::kUnknownSource);
  EXPECT_EQ(with([](auto& h) { h.stream = 2; }), tcp::HelloStatus::kBadStream);
  EXPECT_EQ(with([](auto& h) { h.slotBytes = 1; }), tcp::HelloStatus::kGeometryMismatch);
  EXPECT_EQ(with([](auto& h) { h.rail = 2; }), tcp::HelloStatus::kBadRail);
  EXPECT_EQ(with([](auto& h) { h.flags = tcp::kHelloDialBack; }), tcp::HelloStatus::kAccepted);
  EXPECT_EQ(with([](auto& h) { h.flags = 2; }), tcp::HelloStatus::kBadRail);
  EXPECT_EQ(with([](auto& h) { h.rail = 0; }), tcp::HelloStatus::kAccepted);
}

std::string names(const std::vector<tcp::InterfaceChoice>& chosen) {
  std::string out;
  for (const auto& c : chosen) out += (out.empty() ? "" : " ") + c.name;
  return out;
}

TEST(TcpRails, EveryNamedInterfaceIsARailButLoopbackNever) {
  std::vector<tcp::NetInterface> list = {
      {"lo", {"127.0.0.1"}, true, true},     {"eth0", {"198.18.0.1"}, true, false},
      {"eth1", {"198.18.1.1"}, true, false}, {"eth2", {"198.18.2.1"}, false, false},
      {"eth3", {"fe80::3"}, true, false},    {"ib0", {"10.0.0.1"}, true, false},
  };
  EXPECT_EQ(names(tcp::pickInterfaces(list, "eth", 4)), "eth0 eth1");  // eth2 down, eth3 no address
  EXPECT_EQ(names(tcp::pickInterfaces(list, "ib,eth", 4)), "eth0 eth1 ib0");  // system order
  EXPECT_EQ(names(tcp::pickInterfaces(list, "ib,eth", 2)), "eth0 eth1");
  EXPECT_EQ(names(tcp::pickInterfaces(list, "", 4)), "ib0");  // automatic: the ib class
  list.pop_back();
  EXPECT_EQ(names(tcp::pickInterfaces(list, "", 4)), "eth0 eth1");  // then all but docker, lo
  list.push_back({"ib0", {"10.0.0.1"}, true, false});
  EXPECT_EQ(names(tcp::pickInterfaces(list, "^lo", 4)), "eth0 eth1 ib0");
  EXPECT_EQ(names(tcp::pickInterfaces(list, "^ib", 4)), "lo");  // loopback first: alone
  EXPECT_EQ(names(tcp::pickInterfaces(list, "eth,lo", 4)), "lo");
  EXPECT_EQ(names(tcp::pickInterfaces(list, "=eth1,eth0", 4)), "eth0 eth1");
  EXPECT_EQ(names(tcp::pickInterfaces(list, "wlan", 4)), "");
  EXPECT_EQ(tcp::pickInterface(list, "eth")->name, "eth0");
}

TEST(TcpRails, SubnetsContainTheirAddressesOnly) {
  EXPECT_TRUE(tcp::sameSubnet("198.18.1.7", "198.18.1.1", 24));
  EXPECT_FALSE(tcp::sameSubnet("198.18.2.7", "198.18.1.1", 24));
  EXPECT_TRUE(tcp::sameSubnet("198.18.2.7", "198.18.1.1", 15));
  EXPECT_TRUE(tcp::sameSubnet("10.1.2.3", "192.168.0.1", 0));
  EXPECT_TRUE(tcp::sameSubnet("10.0.0.129", "10.0.0.130", 25));
  EXPECT_FALSE(tcp::sameSubnet("10.0.0.127", "10.0.0.130", 25));
  EXPECT_TRUE(tcp::sameSubnet("fd00::2:5", "fd00::1", 64));
  EXPECT_FALSE(tcp::sameSubnet("fd01::5", "fd00::1", 64));
  EXPECT_FALSE(tcp::sameSubnet("fd00::5", "10.0.0.1", 8));       // mixed families
  EXPECT_FALSE(tcp::sameSubnet("10.0.0.5", "10.0.0.1", -1));     // unknown prefix
  EXPECT_FALSE(tcp::sameSubnet("10.0.0.5", "10.0.0.1", 33));     // out of range
  EXPECT_FALSE(tcp::sameSubnet("host.example", "10.0.0.1", 8));  // not numeric
}

TEST(TcpRails, FoundInterfacesPairUpWithThePeersBySubnet) {
  auto rails = [](const std::vector<tcp::InterfaceChoice>& mine,
                  const std::vector<std::string>& peer) {
    std::string out;
    for (const std::string& a : tcp::matchRails(mine, peer, {"198.18.0.1", "172.17.0.1"})) {
      out += (out.empty() ? "" : " ") + a;
    }
    return out;
  };
  const std::vector<tcp::InterfaceChoice> mine = {
      {"eth0", "198.18.0.1", 24}, {"eth1", "198.18.1.1", 24}, {"eth2", "198.18.2.1", 24}};
  // The peer lists its interfaces in another order: each of mine finds its subnet.
  EXPECT_EQ(rails(mine, {"198.18.0.2", "198.18.2.2", "198.18.1.2"}), "198.18.1.2 198.18.2.2");
  // A peer with eth1 only, or with a management network this host does not share.
  EXPECT_EQ(rails(mine, {"198.18.0.2", "198.18.1.2"}), "198.18.1.2");
  EXPECT_EQ(rails(mine, {"198.18.0.2", "10.9.0.2"}), "");
  EXPECT_EQ(rails(mine, {"198.18.0.2"}), "");
  // A further address on the primary's subnet leaves by the primary's route: no rail.
  EXPECT_EQ(rails(mine, {"198.18.0.2", "198.18.0.3"}), "");
  // An address of this host (a docker0 every host has at 172.17.0.1): never a rail.
  EXPECT_EQ(rails({{"eth0", "198.18.0.1", 24}, {"docker0", "172.17.0.1", 16}},
                  {"198.18.0.2", "172.17.0.1"}),
            "");
  // Two further addresses on one subnet: one rail (the first), each address used once.
  EXPECT_EQ(rails({mine[0], mine[1]}, {"198.18.0.2", "198.18.1.2", "198.18.1.3"}), "198.18.1.2");
  // A prefix nobody knows matches nothing; nothing from nothing.
  EXPECT_EQ(rails({mine[0], {"eth1", "198.18.1.1", -1}}, {"198.18.0.2", "198.18.1.2"}), "");
  EXPECT_EQ(rails({}, {"198.18.0.2", "198.18.1.2"}), "");
}

TEST(TcpRails, ThisHostsInterfacesHaveTheirPrefixes) {
  for (const tcp::NetInterface& interface : tcp::listInterfaces()) {
    ASSERT_EQ(interface.prefixes.size(), interface.addresses.size()) << interface.name;
    if (interface.name == "lo") {
      for (size_t i = 0; i < interface.addresses.size(); ++i) {
        if (interface.addresses[i] == "127.0.0.1") {
          EXPECT_EQ(interface.prefixes[i], 8);
        }
        if (interface.addresses[i] == "::1") {
          EXPECT_EQ(interface.prefixes[i], 128);
        }
      }
    }
  }
}

}  // namespace
}  // namespace grove::transport
