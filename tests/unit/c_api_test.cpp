// Error paths of the C ABI (grove.h): every bad argument returns the right groveResult_t,
// leaves a message naming the argument as the thread's last error, and never throws. The
// happy paths are exercised from C by tests/c_api/c_api_test.c.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "grove/grove.h"
#include "grove/version.hpp"

namespace {

std::string lastError() { return groveGetLastError(nullptr); }

#define EXPECT_RESULT_MENTIONS(call, code, text)                         \
  do {                                                                   \
    EXPECT_EQ((call), (code));                                           \
    EXPECT_NE(lastError().find(text), std::string::npos) << lastError(); \
  } while (0)

/// A groveOptions_t with `key` = `value`, destroyed with the object.
class OptionsHandle {
 public:
  OptionsHandle(const char* key, const char* value) {
    EXPECT_EQ(groveOptionsCreate(&options_), groveSuccess);
    EXPECT_EQ(groveOptionsSet(options_, key, value), groveSuccess) << lastError();
  }
  ~OptionsHandle() { groveOptionsDestroy(options_); }
  OptionsHandle(const OptionsHandle&) = delete;
  OptionsHandle& operator=(const OptionsHandle&) = delete;
  groveOptions_t get() const { return options_; }

 private:
  groveOptions_t options_ = nullptr;
};

/// One single-rank communicator: blocking calls complete without peers.
class CApiSingleRank : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(groveCommInitAll(&comm_, 1, nullptr), groveSuccess); }
  void TearDown() override { EXPECT_EQ(groveCommDestroy(comm_), groveSuccess); }
  groveComm_t comm_ = nullptr;
};

TEST(CApi, ResultCodesMatchNccl) {
  EXPECT_EQ(groveSuccess, 0);
  EXPECT_EQ(groveUnhandledCudaError, 1);
  EXPECT_EQ(groveSystemError, 2);
  EXPECT_EQ(groveInternalError, 3);
  EXPECT_EQ(groveInvalidArgument, 4);
  EXPECT_EQ(groveInvalidUsage, 5);
  EXPECT_EQ(groveRemoteError, 6);
  EXPECT_EQ(groveInProgress, 7);
  EXPECT_EQ(groveTimeout, 8);
  EXPECT_EQ(groveBfloat16, 9);
  EXPECT_EQ(groveAvg, 4);
}

TEST(CApi, ErrorStrings) {
  EXPECT_STREQ(groveGetErrorString(groveSuccess), "no error");
  EXPECT_STREQ(groveGetErrorString(groveSystemError), "unhandled system error");
  EXPECT_STREQ(groveGetErrorString(groveInternalError), "internal error");
  EXPECT_STREQ(groveGetErrorString(groveInvalidArgument), "invalid argument");
  EXPECT_STREQ(groveGetErrorString(groveInvalidUsage), "invalid usage");
  EXPECT_STREQ(groveGetErrorString(groveTimeout), "timeout");
  EXPECT_STREQ(groveGetErrorString(static_cast<groveResult_t>(-3)), "unknown result code");
  EXPECT_STREQ(groveGetErrorString(groveNumResults), "unknown result code");
}

TEST(CApi, VersionAndUniqueId) {
  int version = 0;
  EXPECT_EQ(groveGetVersion(&version), groveSuccess);
  EXPECT_EQ(version, GROVE_VERSION_CODE);
  EXPECT_RESULT_MENTIONS(groveGetVersion(nullptr), groveInvalidArgument, "version is NULL");
  EXPECT_NE(lastError().find("groveGetVersion"), std::string::npos);
  EXPECT_RESULT_MENTIONS(groveGetUniqueId(nullptr), groveInvalidArgument, "uniqueId");
  groveUniqueId a{}, b{};
  EXPECT_EQ(groveGetUniqueId(&a), groveSuccess);
  EXPECT_EQ(groveGetUniqueId(&b), groveSuccess);
  EXPECT_NE(std::memcmp(&a, &b, sizeof a), 0);
}

TEST(CApi, LastErrorIsPerThread) {
  EXPECT_EQ(groveGetVersion(nullptr), groveInvalidArgument);
  std::string other = "unset";
  std::thread([&] { other = groveGetLastError(nullptr); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(lastError(), "");
}

TEST(CApi, InitRankRejectsBadArguments) {
  groveUniqueId id{};
  ASSERT_EQ(groveGetUniqueId(&id), groveSuccess);
  groveComm_t comm = nullptr;
  EXPECT_RESULT_MENTIONS(groveCommInitRank(nullptr, 1, id, 0), groveInvalidArgument, "comm");
  EXPECT_RESULT_MENTIONS(groveCommInitRank(&comm, 0, id, 0), groveInvalidArgument, "nranks");
  EXPECT_RESULT_MENTIONS(groveCommInitRank(&comm, 2, id, 2), groveInvalidArgument, "rank");
  EXPECT_RESULT_MENTIONS(groveCommInitRank(&comm, 2, id, -1), groveInvalidArgument, "rank");
  EXPECT_EQ(comm, nullptr);
}

TEST(CApi, InitRankAloneWorks) {
  groveUniqueId id{};
  ASSERT_EQ(groveGetUniqueId(&id), groveSuccess);
  groveComm_t comm = nullptr;
  ASSERT_EQ(groveCommInitRank(&comm, 1, id, 0), groveSuccess);
  int count = 0, rank = -1;
  EXPECT_EQ(groveCommCount(comm, &count), groveSuccess);
  EXPECT_EQ(groveCommUserRank(comm, &rank), groveSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(groveCommDestroy(comm), groveSuccess);
}

TEST(CApi, InitRankTimesOutWhenPeersNeverCome) {
  OptionsHandle timeout("GROVE_TIMEOUT", "1");
  groveUniqueId id{};
  ASSERT_EQ(groveGetUniqueId(&id), groveSuccess);
  groveComm_t comm = nullptr;
  EXPECT_EQ(groveCommInitRankConfig(&comm, 2, id, 0, timeout.get()), groveTimeout);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(lastError().find("groveCommInitRank"), std::string::npos) << lastError();
}

TEST(CApi, OptionsSetRejectsMalformedValuesNamingTheKnob) {
  groveOptions_t options = nullptr;
  ASSERT_EQ(groveOptionsCreate(&options), groveSuccess);
  EXPECT_RESULT_MENTIONS(groveOptionsSet(options, "GROVE_TIMEOUT", "soon"), groveInvalidArgument,
                         "GROVE_TIMEOUT='soon' (set from code) is not valid");
  EXPECT_RESULT_MENTIONS(groveOptionsSet(options, "GROVE_NO_SUCH", "1"), groveInvalidArgument,
                         "'GROVE_NO_SUCH' is not a grove knob");
  EXPECT_RESULT_MENTIONS(groveOptionsSet(options, "GROVE_DEBUG", "INFO"), groveInvalidArgument,
                         "GROVE_DEBUG is read once per process");
  EXPECT_RESULT_MENTIONS(groveOptionsSet(options, nullptr, "1"), groveInvalidArgument, "key");
  EXPECT_RESULT_MENTIONS(groveOptionsSet(options, "GROVE_TIMEOUT", nullptr), groveInvalidArgument,
                         "value");
  EXPECT_RESULT_MENTIONS(groveOptionsSet(nullptr, "GROVE_TIMEOUT", "1"), groveInvalidArgument,
                         "options");
  EXPECT_RESULT_MENTIONS(groveOptionsCreate(nullptr), groveInvalidArgument, "options");
  EXPECT_EQ(groveOptionsDestroy(options), groveSuccess);
  EXPECT_EQ(groveOptionsDestroy(nullptr), groveSuccess);
}

TEST(CApi, InitAllConfigAppliesTheOptions) {
  // GROVE_CHECK=1 set from code: a count that differs between ranks fails on every rank
  // before the call (without it each rank would wait for data that never matches).
  OptionsHandle check("GROVE_CHECK", "1");
  groveComm_t comms[2] = {};
  ASSERT_EQ(groveCommInitAllConfig(comms, 2, nullptr, check.get()), groveSuccess) << lastError();
  int32_t value[2][2] = {{1, 2}, {3, 4}};
  ASSERT_EQ(groveGroupStart(), groveSuccess);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(groveAllReduce(value[r], value[r], 1 + r, groveInt32, groveSum, comms[r]),
              groveSuccess);
  }
  EXPECT_RESULT_MENTIONS(groveGroupEnd(), groveInvalidUsage, "differ");
  for (groveComm_t comm : comms) EXPECT_EQ(groveCommDestroy(comm), groveSuccess);
}

TEST(CApi, InitAllRejectsBadArguments) {
  groveComm_t comms[3] = {};
  EXPECT_RESULT_MENTIONS(groveCommInitAll(nullptr, 2, nullptr), groveInvalidArgument, "comms");
  EXPECT_RESULT_MENTIONS(groveCommInitAll(comms, 0, nullptr), groveInvalidArgument, "ndev");
  const int repeated[3] = {0, 1, 0};
  EXPECT_RESULT_MENTIONS(groveCommInitAll(comms, 3, repeated), groveInvalidArgument, "devlist[2]");
  const int negative[2] = {0, -4};
  EXPECT_RESULT_MENTIONS(groveCommInitAll(comms, 2, negative), groveInvalidArgument, "devlist[1]");
  EXPECT_EQ(comms[0], nullptr);
}

TEST(CApi, NullCommAndOutPointers) {
  int value = 0;
  groveResult_t async = groveSuccess;
  EXPECT_RESULT_MENTIONS(groveCommCount(nullptr, &value), groveInvalidArgument, "comm is NULL");
  EXPECT_RESULT_MENTIONS(groveCommUserRank(nullptr, &value), groveInvalidArgument, "comm");
  EXPECT_RESULT_MENTIONS(groveCommGetAsyncError(nullptr, &async), groveInvalidArgument, "comm");
  int32_t buf = 0;
  EXPECT_RESULT_MENTIONS(groveAllReduce(&buf, &buf, 1, groveInt32, groveSum, nullptr),
                         groveInvalidArgument, "groveAllReduce: comm is NULL");
  EXPECT_RESULT_MENTIONS(groveBroadcast(&buf, &buf, 1, groveInt32, 0, nullptr),
                         groveInvalidArgument, "comm");
  EXPECT_RESULT_MENTIONS(groveSend(&buf, 1, groveInt32, 0, nullptr), groveInvalidArgument,
                         "groveSend");
  EXPECT_RESULT_MENTIONS(groveRecv(&buf, 1, groveInt32, 0, nullptr), groveInvalidArgument,
                         "groveRecv");
  // Like NCCL (and free), destroying or aborting nothing is not an error.
  EXPECT_EQ(groveCommDestroy(nullptr), groveSuccess);
  EXPECT_EQ(groveCommAbort(nullptr), groveSuccess);
}

TEST_F(CApiSingleRank, QueriesAndNullOutPointers) {
  int value = -1;
  EXPECT_EQ(groveCommCount(comm_, &value), groveSuccess);
  EXPECT_EQ(value, 1);
  EXPECT_RESULT_MENTIONS(groveCommCount(comm_, nullptr), groveInvalidArgument, "count");
  EXPECT_RESULT_MENTIONS(groveCommUserRank(comm_, nullptr), groveInvalidArgument, "rank");
  EXPECT_RESULT_MENTIONS(groveCommGetAsyncError(comm_, nullptr), groveInvalidArgument,
                         "asyncError");
  groveResult_t async = groveInternalError;
  EXPECT_EQ(groveCommGetAsyncError(comm_, &async), groveSuccess);
  EXPECT_EQ(async, groveSuccess);
}

TEST_F(CApiSingleRank, CollectivesOnOneRank) {
  int32_t send[3] = {4, -5, 6}, recv[3] = {};
  EXPECT_EQ(groveAllReduce(send, recv, 3, groveInt32, groveSum, comm_), groveSuccess);
  EXPECT_EQ(recv[1], -5);
  EXPECT_EQ(groveAllReduce(send, recv, 3, groveInt32, groveAvg, comm_), groveSuccess);
  EXPECT_EQ(recv[2], 6);
  // Count 0 accepts NULL buffers.
  EXPECT_EQ(groveAllReduce(nullptr, nullptr, 0, groveInt32, groveSum, comm_), groveSuccess);
  EXPECT_EQ(groveAllGather(nullptr, nullptr, 0, groveFloat, comm_), groveSuccess);
  int32_t one = 0;
  EXPECT_EQ(groveBroadcast(&send[0], &one, 1, groveInt32, 0, comm_), groveSuccess);
  EXPECT_EQ(one, 4);
}

TEST_F(CApiSingleRank, BadDatatypeOpRootPeerAndBuffers) {
  int32_t buf[4] = {};
  EXPECT_RESULT_MENTIONS(
      groveAllReduce(buf, buf, 4, static_cast<groveDataType_t>(99), groveSum, comm_),
      groveInvalidArgument, "datatype is 99 on rank 0");
  EXPECT_RESULT_MENTIONS(groveAllGather(buf, buf, 4, groveNumTypes, comm_), groveInvalidArgument,
                         "datatype is 10");
  EXPECT_RESULT_MENTIONS(
      groveReduce(buf, buf, 4, groveInt32, static_cast<groveRedOp_t>(-1), 0, comm_),
      groveInvalidArgument, "op is -1");
  EXPECT_RESULT_MENTIONS(groveReduceScatter(buf, buf, 1, groveInt32, groveNumOps, comm_),
                         groveInvalidArgument, "op is 8");
  EXPECT_RESULT_MENTIONS(groveBroadcast(buf, buf, 4, groveInt32, 1, comm_), groveInvalidArgument,
                         "root is 1 on rank 0, expected 0 <= root < nranks = 1");
  EXPECT_RESULT_MENTIONS(groveReduce(buf, buf, 4, groveInt32, groveSum, -2, comm_),
                         groveInvalidArgument, "root is -2");
  EXPECT_RESULT_MENTIONS(groveGather(buf, buf, 4, groveInt32, 3, comm_), groveInvalidArgument,
                         "root");
  EXPECT_RESULT_MENTIONS(groveScatter(buf, buf, 4, groveInt32, 3, comm_), groveInvalidArgument,
                         "root");
  EXPECT_RESULT_MENTIONS(groveSend(buf, 4, groveInt32, 1, comm_), groveInvalidArgument,
                         "peer is 1");
  EXPECT_RESULT_MENTIONS(groveRecv(buf, 4, groveInt32, -1, comm_), groveInvalidArgument,
                         "peer is -1");
  EXPECT_RESULT_MENTIONS(groveAllReduce(nullptr, buf, 4, groveInt32, groveSum, comm_),
                         groveInvalidArgument, "sendbuff is NULL with count 4 on rank 0");
  EXPECT_RESULT_MENTIONS(groveAllReduce(buf, nullptr, 1, groveInt32, groveSum, comm_),
                         groveInvalidArgument, "recvbuff is NULL");
  EXPECT_RESULT_MENTIONS(groveBroadcast(nullptr, buf, 1, groveInt32, 0, comm_),
                         groveInvalidArgument, "sendbuff");
  EXPECT_RESULT_MENTIONS(groveReduce(buf, nullptr, 1, groveInt32, groveSum, 0, comm_),
                         groveInvalidArgument, "recvbuff");
  EXPECT_RESULT_MENTIONS(groveAlltoAll(buf, nullptr, 1, groveInt32, comm_), groveInvalidArgument,
                         "recvbuff");
  EXPECT_RESULT_MENTIONS(groveGather(nullptr, buf, 1, groveInt32, 0, comm_), groveInvalidArgument,
                         "sendbuff");
  EXPECT_RESULT_MENTIONS(groveScatter(buf, nullptr, 1, groveInt32, 0, comm_), groveInvalidArgument,
                         "recvbuff");
  EXPECT_RESULT_MENTIONS(groveSend(nullptr, 1, groveInt32, 0, comm_), groveInvalidArgument,
                         "sendbuff");
  EXPECT_RESULT_MENTIONS(groveRecv(nullptr, 1, groveInt32, 0, comm_), groveInvalidArgument,
                         "recvbuff");
  // The communicator is still usable after rejected calls.
  buf[0] = 9;
  EXPECT_EQ(groveAllReduce(buf, buf + 1, 1, groveInt32, groveMax, comm_), groveSuccess);
  EXPECT_EQ(buf[1], 9);
}

TEST_F(CApiSingleRank, SplitRejectsBadArguments) {
  groveComm_t out = nullptr;
  int dummy = 0;
  EXPECT_RESULT_MENTIONS(groveCommSplit(nullptr, 0, 0, &out, nullptr), groveInvalidArgument,
                         "comm");
  EXPECT_RESULT_MENTIONS(groveCommSplit(comm_, 0, 0, nullptr, nullptr), groveInvalidArgument,
                         "newcomm");
  EXPECT_RESULT_MENTIONS(groveCommSplit(comm_, 0, 0, &out, &dummy), groveInvalidArgument, "config");
  EXPECT_RESULT_MENTIONS(groveCommSplit(comm_, -2, 0, &out, nullptr), groveInvalidArgument,
                         "color is -2");
  ASSERT_EQ(groveGroupStart(), groveSuccess);
  EXPECT_RESULT_MENTIONS(groveCommSplit(comm_, 0, 0, &out, nullptr), groveInvalidUsage, "group");
  EXPECT_EQ(groveGroupEnd(), groveSuccess);  // split is not a queued call: the group is clean
  EXPECT_EQ(out, nullptr);
}

TEST_F(CApiSingleRank, SplitOfOneRank) {
  groveComm_t out = nullptr;
  ASSERT_EQ(groveCommSplit(comm_, 3, 0, &out, nullptr), groveSuccess);
  ASSERT_NE(out, nullptr);
  int count = 0;
  EXPECT_EQ(groveCommCount(out, &count), groveSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(groveCommDestroy(out), groveSuccess);
  out = comm_;
  ASSERT_EQ(groveCommSplit(comm_, GROVE_SPLIT_NOCOLOR, 0, &out, nullptr), groveSuccess);
  EXPECT_EQ(out, nullptr);
}

TEST(CApi, GroupEndWithoutStart) {
  EXPECT_RESULT_MENTIONS(groveGroupEnd(), groveInvalidUsage, "no group is open");
}

TEST_F(CApiSingleRank, GroupReportsFirstErrorAndRunsAcceptedCalls) {
  int32_t send = 3, recv = 0, buf = 0;
  ASSERT_EQ(groveGroupStart(), groveSuccess);
  EXPECT_EQ(groveAllReduce(&buf, &buf, 1, static_cast<groveDataType_t>(42), groveSum, comm_),
            groveInvalidArgument);
  EXPECT_EQ(groveAllReduce(&send, &recv, 1, groveInt32, groveSum, comm_), groveSuccess);
  EXPECT_EQ(groveSend(&buf, 1, groveInt32, 7, comm_), groveInvalidArgument);
  EXPECT_RESULT_MENTIONS(groveGroupEnd(), groveInvalidArgument, "datatype is 42");
  EXPECT_EQ(recv, 3);
  // The next group starts clean.
  ASSERT_EQ(groveGroupStart(), groveSuccess);
  EXPECT_EQ(groveAllReduce(&send, &recv, 1, groveInt32, groveProd, comm_), groveSuccess);
  EXPECT_EQ(groveGroupEnd(), groveSuccess);
}

TEST_F(CApiSingleRank, DestroyInsideOpenGroupIsRefused) {
  int32_t send = 3, recv = 0;
  ASSERT_EQ(groveGroupStart(), groveSuccess);
  ASSERT_EQ(groveAllReduce(&send, &recv, 1, groveInt32, groveSum, comm_), groveSuccess);
  EXPECT_RESULT_MENTIONS(groveCommDestroy(comm_), groveInvalidUsage, "groveGroupEnd");
  EXPECT_EQ(groveGroupEnd(), groveSuccess);
  EXPECT_EQ(recv, 3);
}

TEST(CApi, SendRecvPairInOneGroupFromOneThread) {
  groveComm_t comms[2] = {};
  ASSERT_EQ(groveCommInitAll(comms, 2, nullptr), groveSuccess);
  int64_t out[2] = {11, 22}, in[2] = {0, 0};
  ASSERT_EQ(groveGroupStart(), groveSuccess);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(groveSend(&out[r], 1, groveInt64, 1 - r, comms[r]), groveSuccess);
    EXPECT_EQ(groveRecv(&in[r], 1, groveInt64, 1 - r, comms[r]), groveSuccess);
  }
  EXPECT_EQ(groveGroupEnd(), groveSuccess) << lastError();
  EXPECT_EQ(in[0], 22);
  EXPECT_EQ(in[1], 11);
  for (groveComm_t comm : comms) EXPECT_EQ(groveCommDestroy(comm), groveSuccess);
}

TEST(CApi, AbortedPeerGivesRemoteErrorNotHang) {
  OptionsHandle timeout("GROVE_TIMEOUT", "30");
  groveComm_t comms[3] = {};
  ASSERT_EQ(groveCommInitAllConfig(comms, 3, nullptr, timeout.get()), groveSuccess);
  EXPECT_EQ(groveCommAbort(comms[2]), groveSuccess);
  int32_t value[2] = {1, 2};
  ASSERT_EQ(groveGroupStart(), groveSuccess);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(groveAllReduce(&value[r], &value[r], 1, groveInt32, groveSum, comms[r]),
              groveSuccess);
  }
  EXPECT_EQ(groveGroupEnd(), groveRemoteError) << lastError();
  for (int r = 0; r < 2; ++r) EXPECT_EQ(groveCommDestroy(comms[r]), groveSuccess);
}

}  // namespace
