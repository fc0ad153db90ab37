// Launcher detection (src/bootstrap/launch.hpp) for each launcher's variables, the
// precedence order and malformed values; and the unique id's contents (unique_id.hpp):
// round trips and rejection of corrupted ids.
#include "bootstrap/launch.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "bootstrap/random.hpp"
#include "bootstrap/unique_id.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<LaunchInfo> detect(const Env& env) {
  return detectLaunch([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// The message of the kInvalidArgument error `env` must raise.
std::string failure(const Env& env) {
  try {
    detect(env);
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(DetectLaunch, NothingRecognised) {
  EXPECT_FALSE(detect({}).has_value());
  EXPECT_FALSE(detect({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}, {"GROVE_SECRET", "s"}}));
}

TEST(DetectLaunch, Grove) {
  auto info = detect({{"GROVE_RANK", "2"},
                      {"GROVE_WORLD_SIZE", "5"},
                      {"GROVE_LOCAL_RANK", "0"},
                      {"GROVE_LOCAL_SIZE", "3"},
                      {"GROVE_ROOT", "node7:29500"},
                      {"GROVE_SECRET", "abc"}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->source, "grove");
  EXPECT_EQ(info->rank, 2);
  EXPECT_EQ(info->worldSize, 5);
  EXPECT_EQ(info->localRank, 0);
  EXPECT_EQ(info->localSize, 3);
  EXPECT_EQ(info->rootHost, "node7");
  EXPECT_EQ(info->rootPort, 29500);
  EXPECT_EQ(info->secret, "abc");
}

TEST(DetectLaunch, GroveRootForms) {
  Env env{{"GROVE_RANK", "0"}, {"GROVE_WORLD_SIZE", "1"}};
  env["GROVE_ROOT"] = "[::1]:1";
  auto v6 = detect(env);
  EXPECT_EQ(v6->rootHost, "::1");
  EXPECT_EQ(v6->rootPort, 1);
  env["GROVE_ROOT"] = "10.0.0.1:65535";
  EXPECT_EQ(detect(env)->rootHost, "10.0.0.1");
  EXPECT_EQ(detect(env)->rootPort, 65535);
  EXPECT_EQ(detect(env)->localRank, -1);
  EXPECT_EQ(detect(env)->localSize, 0);
  EXPECT_EQ(detect(env)->secret, "");
  for (const char* bad : {"node7", "node7:", ":29500", "node7:0", "node7:65536", "node7:29x",
                          "::1:29500", "[::1]29500", "[::1:29500", "[]:1"}) {
    env["GROVE_ROOT"] = bad;
    std::string message = failure(env);
    EXPECT_NE(message.find("GROVE_ROOT"), std::string::npos) << message;
    EXPECT_NE(message.find("host:port"), std::string::npos) << message;
    EXPECT_NE(message.find("[ipv6]:port"), std::string::npos) << message;
  }
}

TEST(DetectLaunch, Torchrun) {
  auto info = detect({{"RANK", "3"},
                      {"WORLD_SIZE", "8"},
                      {"LOCAL_RANK", "1"},
                      {"LOCAL_WORLD_SIZE", "2"},
                      {"MASTER_ADDR", "trainer-0"},
                      {"MASTER_PORT", "29400"}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->source, "torchrun");
  EXPECT_EQ(info->rank, 3);
  EXPECT_EQ(info->worldSize, 8);
  EXPECT_EQ(info->localRank, 1);
  EXPECT_EQ(info->localSize, 2);
  EXPECT_EQ(info->rootHost, "trainer-0");
  EXPECT_EQ(info->rootPort, 29400);
}

TEST(DetectLaunch, OpenMpi) {
  auto info = detect({{"OMPI_COMM_WORLD_RANK", "4"},
                      {"OMPI_COMM_WORLD_SIZE", "6"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                      {"GROVE_ROOT", "[fe80::1]:4000"}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->source, "openmpi");
  EXPECT_EQ(info->rank, 4);
  EXPECT_EQ(info->worldSize, 6);
  EXPECT_EQ(info->localRank, 1);
  EXPECT_EQ(info->localSize, 3);
  EXPECT_EQ(info->rootHost, "fe80::1");
  EXPECT_EQ(info->rootPort, 4000);
}

TEST(DetectLaunch, Mpich) {
  auto info = detect({{"PMI_RANK", "0"},
                      {"PMI_SIZE", "1"},
                      {"MPI_LOCALRANKID", "0"},
                      {"MPI_LOCALNRANKS", "1"},
                      {"MASTER_ADDR", "head"},
                      {"MASTER_PORT", "7000"}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->source, "mpich");
  EXPECT_EQ(info->rank, 0);
  EXPECT_EQ(info->worldSize, 1);
  EXPECT_EQ(info->localRank, 0);
  EXPECT_EQ(info->localSize, 1);
  EXPECT_EQ(info->rootHost, "head");
}

TEST(DetectLaunch, Slurm) {
  Env env{{"SLURM_PROCID", "5"},
          {"SLURM_NTASKS", "7"},
          {"SLURM_LOCALID", "2"},
          {"SLURM_NTASKS_PER_NODE", "4"},
          {"GROVE_ROOT", "n1:1234"}};
  auto info = detect(env);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->source, "slurm");
  EXPECT_EQ(info->rank, 5);
  EXPECT_EQ(info->worldSize, 7);
  EXPECT_EQ(info->localRank, 2);
  EXPECT_EQ(info->localSize, 4);
  env["SLURM_NTASKS_PER_NODE"] = "4(x2)";
  EXPECT_EQ(detect(env)->localSize, 4);
  env["SLURM_NTASKS_PER_NODE"] = "4(x1),3";  // Nodes differ: this host's count is unknown.
  EXPECT_EQ(detect(env)->localSize, 0);
  EXPECT_EQ(detect(env)->localRank, 2);
  env["SLURM_NTASKS_PER_NODE"] = "4(y2)";
  EXPECT_NE(failure(env).find("SLURM_NTASKS_PER_NODE"), std::string::npos);
}

TEST(DetectLaunch, PrecedenceOrder) {
  Env env{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "9"},         {"PMI_RANK", "2"},
          {"PMI_SIZE", "9"},     {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "9"},
          {"RANK", "4"},         {"WORLD_SIZE", "9"},           {"MASTER_ADDR", "m"},
          {"MASTER_PORT", "1"},  {"GROVE_RANK", "5"},           {"GROVE_WORLD_SIZE", "9"}};
  const char* expected[][3] = {{"grove", "GROVE_RANK", "GROVE_WORLD_SIZE"},
                               {"torchrun", "RANK", "WORLD_SIZE"},
                               {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                               {"mpich", "PMI_RANK", "PMI_SIZE"},
                               {"slurm", "SLURM_PROCID", "SLURM_NTASKS"}};
  int rank = 5;
  for (auto& [source, rankVar, sizeVar] : expected) {
    auto info = detect(env);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->source, source);
    EXPECT_EQ(info->rank, rank--);
    env.erase(rankVar);
    env.erase(sizeVar);
  }
  EXPECT_FALSE(detect(env).has_value());
}

TEST(DetectLaunch, GroveRootWinsOverMasterAddress) {
  auto info = detect({{"RANK", "0"},
                      {"WORLD_SIZE", "2"},
                      {"MASTER_ADDR", "torch-host"},
                      {"MASTER_PORT", "29500"},
                      {"GROVE_ROOT", "grove-host:29600"}});
  EXPECT_EQ(info->rootHost, "grove-host");
  EXPECT_EQ(info->rootPort, 29600);
}

TEST(DetectLaunch, MalformedValuesNameTheVariable) {
  const Env root{{"GROVE_ROOT", "h:1"}};
  auto with = [&](Env extra) {
    extra.insert(root.begin(), root.end());
    return extra;
  };
  struct Case {
    Env env;
    const char* variable;
    const char* expected;
  };
  const Case cases[] = {
      {with({{"GROVE_RANK", "x"}, {"GROVE_WORLD_SIZE", "2"}}), "GROVE_RANK='x'", "[0, "},
      {with({{"GROVE_RANK", "2"}, {"GROVE_WORLD_SIZE", "2"}}), "GROVE_RANK='2'",
       "[0, GROVE_WORLD_SIZE=2)"},
      {with({{"GROVE_RANK", "-1"}, {"GROVE_WORLD_SIZE", "2"}}), "GROVE_RANK='-1'", "[0, "},
      {with({{"GROVE_RANK", "0"}, {"GROVE_WORLD_SIZE", "0"}}), "GROVE_WORLD_SIZE='0'", "positive"},
      {with({{"GROVE_RANK", "0"}, {"GROVE_WORLD_SIZE", "2 "}}), "GROVE_WORLD_SIZE='2 '",
       "positive"},
      {with({{"GROVE_RANK", "0"}}), "GROVE_RANK is set but GROVE_WORLD_SIZE is not", ""},
      {with({{"WORLD_SIZE", "4"}}), "WORLD_SIZE is set but RANK is not", ""},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "5"}}),
       "LOCAL_WORLD_SIZE='5'", "[1, WORLD_SIZE=4]"},
      {with({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}),
       "LOCAL_RANK='2'", "[0, LOCAL_WORLD_SIZE=2)"},
      {{{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}, "mpich", "GROVE_ROOT=host:port"},
      {{{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MASTER_ADDR", "h"}},
       "MASTER_ADDR is set",
       "MASTER_PORT"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "99999"}},
       "MASTER_PORT='99999'",
       "1..65535"},
  };
  for (const Case& c : cases) {
    std::string message = failure(c.env);
    EXPECT_NE(message.find(c.variable), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(DetectLaunch, EmptyVariablesCountAsUnset) {
  EXPECT_FALSE(detect({{"GROVE_RANK", ""}, {"GROVE_WORLD_SIZE", ""}}).has_value());
}

TEST(UniqueId, RoundTrips) {
  for (const IdContents& contents :
       {IdContents{"10.1.2.3", 29500, randomSecret()}, IdContents{"::1", 1, ""},
        IdContents{std::string(82, 'h'), 65535, std::string(32, 's')}}) {
    char id[kUniqueIdBytes];
    encodeUniqueId(contents, id);
    auto decoded = decodeUniqueId(id);
    ASSERT_TRUE(decoded.has_value()) << contents.host;
    EXPECT_EQ(decoded->host, contents.host);
    EXPECT_EQ(decoded->port, contents.port);
    EXPECT_EQ(decoded->secret, contents.secret);
  }
}

TEST(UniqueId, RejectsWhatDoesNotFit) {
  char id[kUniqueIdBytes];
  for (const IdContents& bad : {IdContents{"", 1, "s"}, IdContents{"h", 0, "s"},
                                IdContents{std::string(83, 'h'), 1, std::string(32, 's')}}) {
    try {
      encodeUniqueId(bad, id);
      ADD_FAILURE() << "expected an error for host " << bad.host;
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    }
  }
}

TEST(UniqueId, RejectsCorruptedIds) {
  char good[kUniqueIdBytes];
  encodeUniqueId(IdContents{"node-3", 4242, randomSecret()}, good);
  char zeros[kUniqueIdBytes] = {};
  EXPECT_FALSE(decodeUniqueId(zeros).has_value());
  // Every single flipped bit anywhere is caught (magic, version, lengths, checksum, padding).
  for (size_t byte = 0; byte < kUniqueIdBytes; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      char id[kUniqueIdBytes];
      std::memcpy(id, good, sizeof(id));
      id[byte] = static_cast<char>(id[byte] ^ (1 << bit));
      EXPECT_FALSE(decodeUniqueId(id).has_value()) << "byte " << byte << " bit " << bit;
    }
  }
  ASSERT_TRUE(decodeUniqueId(good).has_value());
}

}  // namespace
}  // namespace grove::bootstrap
