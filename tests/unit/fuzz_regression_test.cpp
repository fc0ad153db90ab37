// Inputs the fuzzers (fuzz/) found, or that sit on the edges they probe, kept as plain tests
// so that every build checks them, not only the fuzz stage. Each test holds the input as
// bytes and the clear error it must produce: a decoder of peer, store or file bytes must
// reject bad input with a message, never crash, over-allocate or let a bad field through.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store_wire.hpp"
#include "gmock/gmock.h"
#include "grove/error.hpp"
#include "gtest/gtest.h"
#include "plan/printer.hpp"
#include "plan/reader.hpp"
#include "topo/topology.hpp"
#include "transport/tcp/wire.hpp"

namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------- TCP frame headers

namespace tcp = grove::transport::tcp;

std::string frameBytes(uint32_t magic, uint16_t lane, uint16_t kind, uint64_t bytes) {
  tcp::FrameHeader header;
  header.magic = magic;
  header.lane = lane;
  header.kind = kind;
  header.bytes = bytes;
  std::string out(tcp::FrameHeader::kBytes, '\0');
  header.encode(reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

struct FrameVerdict {
  tcp::FrameCheck check;
  std::string message;
};

FrameVerdict judge(std::string_view bytes, const tcp::FrameRules& rules) {
  tcp::FrameHeader header =
      tcp::FrameHeader::decode(reinterpret_cast<const unsigned char*>(bytes.data()));
  tcp::FrameCheck check = tcp::checkFrameHeader(header, rules);
  return {check, check == tcp::FrameCheck::kOk
                     ? std::string()
                     : tcp::describeFrameProblem(check, header, rules, 3)};
}

const tcp::FrameRules kIncoming{true, 4096, 2, 1};

TEST(FuzzRegressionFrame, ValidDataHeaderIsAccepted) {
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 5, 0, 4096), kIncoming).check, tcp::FrameCheck::kOk);
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 1, 0, 0), kIncoming).check, tcp::FrameCheck::kOk);
}

TEST(FuzzRegressionFrame, ZeroBytesAreBadMagic) {
  FrameVerdict v = judge(std::string(tcp::FrameHeader::kBytes, '\0'), kIncoming);
  EXPECT_EQ(v.check, tcp::FrameCheck::kBadMagic);
  EXPECT_EQ(v.message, "rank 3 sent a frame with bad magic 0x00000000 (expected 0x47524654)");
}

TEST(FuzzRegressionFrame, PayloadOfTwoToTheSixtyFourMinusOneIsRefused) {
  FrameVerdict v = judge(frameBytes(tcp::kFrameMagic, 1, 0, UINT64_MAX), kIncoming);
  EXPECT_EQ(v.check, tcp::FrameCheck::kTooLarge);
  EXPECT_EQ(v.message,
            "rank 3 sent a frame of 18446744073709551615 bytes on lane 1, more than the slot "
            "size 4096");
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 1, 0, 4097), kIncoming).check,
            tcp::FrameCheck::kTooLarge);
}

TEST(FuzzRegressionFrame, UnknownKindIsRefused) {
  FrameVerdict v = judge(frameBytes(tcp::kFrameMagic, 1, 4, 0), kIncoming);
  EXPECT_EQ(v.check, tcp::FrameCheck::kUnknownKind);
  EXPECT_EQ(v.message, "rank 3 sent a frame of unknown kind 4 (expected 0 to 3)");
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 1, 0xffff, 0), kIncoming).check,
            tcp::FrameCheck::kUnknownKind);
}

TEST(FuzzRegressionFrame, DataWhereNoneIsExpectedIsRefused) {
  tcp::FrameRules afterBye = kIncoming;
  afterBye.acceptsData = false;
  FrameVerdict v = judge(frameBytes(tcp::kFrameMagic, 1, 0, 8), afterBye);
  EXPECT_EQ(v.check, tcp::FrameCheck::kUnexpectedData);
  EXPECT_EQ(v.message, "rank 3 sent a data frame on a connection that carries none");
  // Control frames stay acceptable (an abort carries an 8.. byte notice, a heartbeat none).
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 0, 1, 8), afterBye).check, tcp::FrameCheck::kOk);
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 0, 2, 0), afterBye).check, tcp::FrameCheck::kOk);
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 0, 3, 0), afterBye).check, tcp::FrameCheck::kOk);
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 0, 1, 0), afterBye).check,
            tcp::FrameCheck::kBadControlSize);
  EXPECT_EQ(judge(frameBytes(tcp::kFrameMagic, 0, 3, 1), afterBye).check,
            tcp::FrameCheck::kBadControlSize);
}

TEST(FuzzRegressionFrame, LaneOfAnotherStreamIsRefused) {
  FrameVerdict v = judge(frameBytes(tcp::kFrameMagic, 4, 0, 8), kIncoming);
  EXPECT_EQ(v.check, tcp::FrameCheck::kWrongStream);
  EXPECT_EQ(v.message, "rank 3 sent lane 4 on stream 1 (expected stream 0)");
}

TEST(FuzzRegressionFrame, ZeroStreamsNeverDividesByZero) {
  tcp::FrameRules broken{true, 4096, 0, 0};
  FrameVerdict v = judge(frameBytes(tcp::kFrameMagic, 4, 0, 8), broken);
  EXPECT_EQ(v.check, tcp::FrameCheck::kWrongStream);
  EXPECT_EQ(v.message, "rank 3 sent lane 4 on stream 0 (expected stream -1)");
}

TEST(FuzzRegressionFrame, UnknownHelloStatusIsDescribed) {
  EXPECT_STREQ(tcp::describe(tcp::HelloStatus{77}), "unknown status");
  EXPECT_STREQ(tcp::describe(tcp::HelloStatus::kBadStream),
               "stream index beyond the listener's GROVE_NSOCKS");
}

// ---------------------------------------------------------------- store requests

namespace wire = grove::bootstrap::wire;
using Outcome = wire::DecodedRequest::Outcome;

std::string request(uint8_t op, std::string_view key, uint64_t valueBytes, std::string_view value) {
  std::string out(1, static_cast<char>(op));
  wire::putU32(out, static_cast<uint32_t>(key.size()));
  out += key;
  wire::putU64(out, valueBytes);
  out += value;
  return out;
}

wire::DecodedRequest decode(std::string_view in) {
  return wire::decodeRequest(in, grove::bootstrap::kMaxKeyBytes, grove::bootstrap::kMaxValueBytes);
}

TEST(FuzzRegressionStore, CompleteSetDecodes) {
  std::string bytes = request(wire::kSet, "k", 3, "abc") + "next";
  wire::DecodedRequest r = decode(bytes);
  EXPECT_EQ(r.outcome, Outcome::kComplete);
  EXPECT_EQ(r.frameBytes, 1u + 4 + 1 + 8 + 3);
  EXPECT_EQ(r.op, wire::kSet);
  EXPECT_EQ(r.key, "k");
  EXPECT_EQ(r.value, "abc");
}

TEST(FuzzRegressionStore, EveryPrefixIsIncomplete) {
  std::string bytes = request(wire::kSet, "key", 5, "value");
  for (size_t n = 0; n < bytes.size(); ++n) {
    wire::DecodedRequest r = decode(std::string_view(bytes).substr(0, n));
    EXPECT_EQ(r.outcome, Outcome::kIncomplete) << n;
    // Once both lengths are known, the whole size is announced for the caller to reserve.
    EXPECT_EQ(r.frameBytes, n >= 1 + 4 + 3 + 8 ? bytes.size() : 0u) << n;
  }
}

TEST(FuzzRegressionStore, UnknownOpcodeIsRefusedAtTheFirstByte) {
  for (uint8_t op : {0, 7, 0xff}) {
    wire::DecodedRequest r = decode(std::string(1, static_cast<char>(op)));
    EXPECT_EQ(r.outcome, Outcome::kMalformed);
    EXPECT_THAT(r.error, HasSubstr("unknown opcode"));
  }
  EXPECT_EQ(decode(std::string_view("\x07", 1)).error, "unknown opcode 0x07 (expected 1 to 6)");
}

TEST(FuzzRegressionStore, KeyLengthBeyondTheLimitIsRefusedBeforeTheKeyArrives) {
  // set, key length 0xffffffff, nothing else.
  wire::DecodedRequest r = decode(std::string_view("\x01\xff\xff\xff\xff", 5));
  EXPECT_EQ(r.outcome, Outcome::kMalformed);
  EXPECT_EQ(r.error, "key length 4294967295 exceeds the limit of 1024 bytes");
  EXPECT_EQ(r.frameBytes, 0u);
}

TEST(FuzzRegressionStore, ValueLengthBeyondTheLimitIsRefusedBeforeTheValueArrives) {
  std::string bytes = request(wire::kSet, "k", UINT64_MAX, "");
  wire::DecodedRequest r = decode(bytes);
  EXPECT_EQ(r.outcome, Outcome::kMalformed);
  EXPECT_EQ(r.error, "value length 18446744073709551615 exceeds the limit of 16777216 bytes");
  r = decode(request(wire::kSet, "k", grove::bootstrap::kMaxValueBytes + 1, ""));
  EXPECT_EQ(r.outcome, Outcome::kMalformed);
  // Exactly the limit is fine: incomplete, with the size to reserve.
  r = decode(request(wire::kSet, "k", grove::bootstrap::kMaxValueBytes, ""));
  EXPECT_EQ(r.outcome, Outcome::kIncomplete);
  EXPECT_EQ(r.frameBytes, 1u + 4 + 1 + 8 + grove::bootstrap::kMaxValueBytes);
}

TEST(FuzzRegressionStore, ValueLengthsEachOpcodeRequires) {
  EXPECT_EQ(decode(request(wire::kGet, "k", 1, "x")).error,
            "a get request carries a value of 1 bytes (expected none)");
  EXPECT_EQ(decode(request(wire::kCheck, "k", 2, "xy")).error,
            "a check request carries a value of 2 bytes (expected none)");
  EXPECT_EQ(decode(request(wire::kAdd, "k", 7, "1234567")).error,
            "an add request's value is 7 bytes (expected 8)");
  // Refused as soon as the length is read, not after the value arrived.
  EXPECT_EQ(decode(request(wire::kAdd, "k", 1u << 20, "")).outcome, Outcome::kMalformed);
  EXPECT_EQ(decode(request(wire::kAdd, "k", 8, "12345678")).outcome, Outcome::kComplete);
  EXPECT_EQ(decode(request(wire::kGet, "", 0, "")).outcome, Outcome::kComplete);
}

// ---------------------------------------------------------------- plan text

std::string planError(std::string_view text) {
  grove::Expected<grove::plan::Plan> plan = grove::plan::fromText(text);
  EXPECT_FALSE(plan.ok()) << text;
  return plan.message();
}

TEST(FuzzRegressionPlan, EmptyAndBinaryInputsFailWithALine) {
  EXPECT_EQ(planError(""), "line 1: expected the 'plan ...' header, found no text");
  EXPECT_EQ(planError(std::string_view("\0\xff\n", 3)),
            std::string("line 1: expected 'plan', found '") + std::string("\0\xff", 2) + "'");
}

TEST(FuzzRegressionPlan, HugeNumbersAreRangeChecked) {
  EXPECT_EQ(planError("plan allreduce algo=x rank=0 nranks=99999999999999999999999"),
            "line 1: nranks must be a decimal integer, found '99999999999999999999999'");
  EXPECT_EQ(planError("plan allreduce algo=x rank=0 nranks=2 chunksPerBlock=1048576 blocks "
                      "in=4097 out=0 scratch=0"),
            "line 1: in 4097 is out of range [0, 4095]");
}

TEST(FuzzRegressionPlan, OperandsAndLabelsAtTheirEdges) {
  const std::string header =
      "plan allreduce algo=x rank=0 nranks=2 chunksPerBlock=1 blocks in=1 out=1 scratch=0\n"
      "channel 0\n";
  EXPECT_EQ(planError(header + ":"), "line 3: step index must be a decimal integer, found ''");
  EXPECT_EQ(planError(header + "0: copy [] -> out[0]"),
            "line 3: unknown buffer '' in src operand (expected in, out or scratch)");
  EXPECT_EQ(planError(header + "0: copy in[] -> out[0]"),
            "line 3: src chunk of in must be a decimal integer, found ''");
  EXPECT_EQ(planError(header + "0: copy scratch[0] -> out[0]"),
            "line 3: src operand names empty buffer scratch");
  EXPECT_EQ(planError(header + "0: send to 1 in[0] after=0."),
            "line 3: after step must be a decimal integer, found ''");
  EXPECT_EQ(planError(header + "0: send to 1 in[0] after=5.0"),
            "line 3: after=5.0 names no step of this plan");
}

TEST(FuzzRegressionPlan, AcceptedTextPrintsBackToTheSamePlan) {
  const std::string text =
      "plan allreduce algo=x rank=1 nranks=3 chunksPerBlock=2 blocks in=1 out=1 scratch=1\n"
      "channel 0\n"
      "  0: rrcs from 2 to 0 in[1] -> out[1] lane=65535 finalize after=0.0\n";
  auto plan = grove::plan::fromText(text);
  ASSERT_TRUE(plan.ok()) << plan.message();
  auto again = grove::plan::fromText(grove::plan::toText(*plan));
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(grove::plan::toText(*again), grove::plan::toText(*plan));
}

// ---------------------------------------------------------------- topology JSON

std::string topoError(std::string_view text) {
  try {
    grove::topo::readJson(text, "fuzz.json");
  } catch (const grove::Error& error) {
    EXPECT_EQ(error.code(), grove::ErrorCode::kInvalidArgument);
    return error.what();
  } catch (const std::exception& other) {
    ADD_FAILURE() << "readJson threw something other than grove::Error: " << other.what();
    return other.what();
  }
  ADD_FAILURE() << "readJson accepted " << text;
  return "";
}

// Found by fuzz_topo_json: a number beyond double's range made nlohmann::json throw
// out_of_range (406), which escaped readJson instead of becoming grove::Error (readJson
// caught only parse_error; the fix is to catch nlohmann::json::exception around the parse).
TEST(FuzzRegressionTopo, NumberOverflowIsAClearError) {
  EXPECT_THAT(topoError("1e999"), HasSubstr("fuzz.json"));
  EXPECT_THAT(topoError(R"({"ranks": 2, "links": [{"from": 0, "to": 1, "gbps": 1e400}]})"),
              HasSubstr("fuzz.json"));
  EXPECT_THAT(topoError(std::string_view("11e111111-000001675063872\0 0, s\": z]}\n", 38)),
              HasSubstr("fuzz.json"));
}

// Found by fuzz_topo_json (a timeout): "ranks": N made N vertices out of a few bytes.
TEST(FuzzRegressionTopo, HugeRankCountIsAClearError) {
  const std::string message = topoError(R"({"ranks": 999991, "links": []})");
  EXPECT_THAT(message, HasSubstr("ranks"));
  EXPECT_THAT(message, HasSubstr("1..65536"));
}

TEST(FuzzRegressionTopo, NotJsonIsAClearError) {
  EXPECT_THAT(topoError(""), HasSubstr("fuzz.json"));
  EXPECT_THAT(topoError(std::string_view("\xff\xfe{", 3)), HasSubstr("fuzz.json"));
  EXPECT_THAT(topoError("[]"), HasSubstr("fuzz.json"));
}

}  // namespace
