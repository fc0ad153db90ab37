// Tests of host detection against a fake sysfs tree (the real one differs on every machine).
#include "topo/detect.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace grove::topo {
namespace {

using ::testing::HasSubstr;

TEST(Detect, ReadsAFakeSysfs) {
  std::string root = ::testing::TempDir() + "grove_fake_sys";
  std::filesystem::remove_all(root);
  auto write = [&](const std::string& rel, const std::string& text) {
    std::filesystem::path p = std::filesystem::path(root) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  write("devices/system/node/node1/cpulist", "8-15\n");
  write("devices/system/node/node0/cpulist", "0-7\n");
  write("devices/system/node/possible", "0-1\n");
  write("class/net/lo/operstate", "unknown\n");
  write("class/net/eth1/operstate", "down\n");
  write("class/net/eth0/operstate", "up\n");
  write("class/net/eth0/speed", "25000\n");
  write("class/net/veth9/operstate", "up\n");
  write("class/net/veth9/speed", "-1\n");
  HostInfo info = detectHost(root);
  ASSERT_EQ(info.numaNodes.size(), 2u);
  EXPECT_EQ(info.numaNodes[0].id, 0);
  EXPECT_EQ(info.numaNodes[1].cpus, "8-15");
  ASSERT_EQ(info.nics.size(), 2u);
  EXPECT_EQ(info.nics[0].name, "eth0");
  EXPECT_EQ(info.nics[0].speedMbps, 25000);
  EXPECT_EQ(info.nics[1].speedMbps, -1);
  std::string text = describeHost(info);
  EXPECT_THAT(text, HasSubstr("NUMA node 1: CPUs 8-15"));
  EXPECT_THAT(text, HasSubstr("NIC eth0: 25000 Mbit/s (up)"));
  EXPECT_THAT(text, HasSubstr("NIC veth9: speed unknown (up)"));
  EXPECT_FALSE(describeHost().empty());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace grove::topo
