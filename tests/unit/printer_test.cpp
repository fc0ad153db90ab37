// Tests of the plan text form: the exact printed text, and the reader that parses it back
// (round trips, and rejection of malformed or truncated text without crashing).
#include "plan/printer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "plan/reader.hpp"

namespace grove::plan {
namespace {

using ::testing::HasSubstr;

Step makeStep(OpKind op, int from, int to, ChunkRef src, ChunkRef dst) {
  Step s;
  s.op = op;
  if (namesRecvPeer(op)) s.recvPeer = from;
  if (sends(op)) s.sendPeer = to;
  if (readsSrc(op)) s.src = src;
  if (writesDst(op)) s.dst = dst;
  return s;
}

ChunkRef in(uint32_t c) { return {BufferKind::kInput, c}; }
ChunkRef out(uint32_t c) { return {BufferKind::kOutput, c}; }
ChunkRef scratch(uint32_t c) { return {BufferKind::kScratch, c}; }

// Rank 1 of a 3-rank ring allreduce.
Plan ringRank1() {
  Plan p;
  p.collective = Collective::kAllReduce;
  p.algorithm = "ring";
  p.rank = 1;
  p.nranks = 3;
  p.chunksPerBlock = 3;
  p.inputBlocks = 1;
  p.outputBlocks = 1;
  Channel& ch = p.channels.emplace_back();
  ch.steps.push_back(makeStep(OpKind::kSend, -1, 2, in(1), {}));
  ch.steps.push_back(makeStep(OpKind::kRecvReduceSend, 0, 2, in(0), {}));
  ch.steps.push_back(makeStep(OpKind::kRecvReduceCopySend, 0, 2, in(2), out(2)));
  ch.steps.back().finalize = true;
  ch.steps.push_back(makeStep(OpKind::kRecvCopySend, 0, 2, {}, out(1)));
  ch.steps.push_back(makeStep(OpKind::kRecv, 0, -1, {}, out(0)));
  return p;
}

Plan twoChannels() {
  Plan p;
  p.collective = Collective::kBroadcast;
  p.algorithm = "x";
  p.rank = 0;
  p.nranks = 2;
  p.root = 0;
  p.chunksPerBlock = 2;
  p.inputBlocks = 1;
  p.outputBlocks = 1;
  p.scratchBlocks = 1;
  p.channels.emplace_back().steps.push_back(makeStep(OpKind::kCopy, -1, -1, in(0), out(0)));
  Step s = makeStep(OpKind::kSend, -1, 1, scratch(1), {});
  s.lane = 3;
  s.after = {0, 0};
  p.channels.emplace_back().steps.push_back(s);
  p.channels.emplace_back();
  return p;
}

bool sameStep(const Step& a, const Step& b) {
  return a.op == b.op && a.recvPeer == b.recvPeer && a.sendPeer == b.sendPeer && a.src == b.src &&
         a.dst == b.dst && a.lane == b.lane && a.finalize == b.finalize &&
         a.after.channel == b.after.channel && a.after.step == b.after.step;
}

bool samePlan(const Plan& a, const Plan& b) {
  if (a.collective != b.collective || a.algorithm != b.algorithm || a.rank != b.rank ||
      a.nranks != b.nranks || a.root != b.root || a.chunksPerBlock != b.chunksPerBlock ||
      a.inputBlocks != b.inputBlocks || a.outputBlocks != b.outputBlocks ||
      a.scratchBlocks != b.scratchBlocks || a.channels.size() != b.channels.size()) {
    return false;
  }
  for (size_t c = 0; c < a.channels.size(); ++c) {
    const auto& x = a.channels[c].steps;
    const auto& y = b.channels[c].steps;
    if (x.size() != y.size()) return false;
    for (size_t s = 0; s < x.size(); ++s) {
      if (!sameStep(x[s], y[s])) return false;
    }
  }
  return true;
}

// A random plan within the reader's ranges, unused operands left at their defaults.
Plan randomPlan(std::mt19937& random) {
  Plan p;
  p.collective = static_cast<Collective>(random() % kCollectiveCount);
  p.algorithm = random() % 4 == 0 ? "" : "algo_" + std::to_string(random() % 100);
  p.nranks = 2 + static_cast<int>(random() % 9);
  p.rank = static_cast<int>(random() % static_cast<uint32_t>(p.nranks));
  p.root = static_cast<int>(random() % static_cast<uint32_t>(p.nranks + 1)) - 1;
  p.chunksPerBlock = 1 + random() % 4;
  p.inputBlocks = 1 + random() % 3;
  p.outputBlocks = 1 + random() % 3;
  p.scratchBlocks = random() % 3;
  const size_t channels = random() % 4;
  for (size_t c = 0; c < channels; ++c) {
    Channel& ch = p.channels.emplace_back();
    const size_t steps = random() % 6;
    for (size_t s = 0; s < steps; ++s) {
      auto op = static_cast<OpKind>(random() % kOpKindCount);
      auto chunk = [&](BufferKind buffer) {
        return ChunkRef{buffer, static_cast<uint32_t>(random() % p.chunks(buffer))};
      };
      Step step = makeStep(op, static_cast<int>(random() % static_cast<uint32_t>(p.nranks)),
                           static_cast<int>(random() % static_cast<uint32_t>(p.nranks)),
                           chunk(BufferKind::kInput),
                           chunk(random() % 2 ? BufferKind::kOutput : BufferKind::kInput));
      if (random() % 3 == 0) step.lane = static_cast<uint16_t>(random() % 70000);
      step.finalize = random() % 4 == 0;
      if (s > 0 && random() % 3 == 0) {
        step.after = {static_cast<int32_t>(c), static_cast<int32_t>(random() % s)};
      }
      ch.steps.push_back(step);
    }
  }
  return p;
}

TEST(Printer, PrintsThePlanExactly) {
  EXPECT_EQ(toText(ringRank1()),
            "plan allreduce algo=ring rank=1 nranks=3 chunksPerBlock=3 blocks in=1 out=1 "
            "scratch=0\n"
            "channel 0\n"
            "  0: send   to 2 in[1]\n"
            "  1: rrs    from 0 to 2 in[0]\n"
            "  2: rrcs   from 0 to 2 in[2] -> out[2] finalize\n"
            "  3: rcs    from 0 to 2 -> out[1]\n"
            "  4: recv   from 0 -> out[0]\n");
  EXPECT_EQ(toText(twoChannels()),
            "plan broadcast algo=x rank=0 nranks=2 root=0 chunksPerBlock=2 blocks in=1 out=1 "
            "scratch=1\n"
            "channel 0\n"
            "  0: copy   in[0] -> out[0]\n"
            "channel 1\n"
            "  0: send   to 1 scratch[1] lane=3 after=0.0\n"
            "channel 2\n");
}

TEST(Printer, NamesEveryKind) {
  const char* names[] = {"send", "recv", "rr",  "copy", "reduce", "rrs", "rcs",
                         "rrc",  "rrcs", "get", "rall", "signal", "wait"};
  for (int i = 0; i < kOpKindCount; ++i) EXPECT_STREQ(toString(static_cast<OpKind>(i)), names[i]);
  EXPECT_EQ(toText(makeStep(OpKind::kRecvReduce, 3, -1, {}, scratch(2))),
            "rr from 3 -> scratch[2]");
  EXPECT_EQ(toText(makeStep(OpKind::kReduce, -1, -1, in(1), out(4))), "reduce in[1] -> out[4]");
  EXPECT_EQ(toText(makeStep(OpKind::kRecvReduceCopy, 0, -1, in(1), out(1))),
            "rrc from 0 in[1] -> out[1]");
  EXPECT_STREQ(toString(Collective::kReduceScatter), "reducescatter");
  EXPECT_STREQ(toString(Collective::kAllToAllv), "alltoallv");
  EXPECT_TRUE(receives(OpKind::kRecvCopySend) && sends(OpKind::kRecvCopySend));
  EXPECT_FALSE(readsSrc(OpKind::kRecvCopySend) || reduces(OpKind::kRecvCopySend));
  EXPECT_TRUE(readsSrc(OpKind::kReduce) && writesDst(OpKind::kReduce) && reduces(OpKind::kReduce) &&
              !receives(OpKind::kReduce));
}

TEST(Reader, RoundTripsPrintedPlans) {
  for (const Plan& p : {ringRank1(), twoChannels()}) {
    Expected<Plan> back = fromText(toText(p));
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_TRUE(samePlan(*back, p)) << toText(*back);
  }
  std::mt19937 random(11);
  for (int trial = 0; trial < 500; ++trial) {
    Plan p = randomPlan(random);
    std::string text = toText(p);
    Expected<Plan> back = fromText(text);
    ASSERT_TRUE(back.ok()) << back.message() << "\n" << text;
    EXPECT_TRUE(samePlan(*back, p)) << text << "---\n" << toText(*back);
  }
}

TEST(Reader, ToleratesBlankLinesTabsAndCarriageReturns) {
  std::string text =
      "\nplan allreduce\talgo=ring rank=1 nranks=3 chunksPerBlock=3 blocks in=1 out=1 "
      "scratch=0\r\n\r\nchannel 0\r\n  0:\tsend to 2  in[1]\r\n";
  Expected<Plan> p = fromText(text);
  ASSERT_TRUE(p.ok()) << p.message();
  ASSERT_EQ(p->channels.size(), 1u);
  EXPECT_TRUE(sameStep(p->channels[0].steps.at(0), ringRank1().channels[0].steps[0]));
}

TEST(Reader, EveryTruncationFailsCleanlyOrParses) {
  const std::string text = toText(ringRank1()) + toText(twoChannels()).substr(100);
  for (size_t length = 0; length <= text.size(); ++length) {
    Expected<Plan> p = fromText(std::string_view(text).substr(0, length));
    if (!p.ok()) {
      EXPECT_THAT(p.message(), HasSubstr("line ")) << "length " << length;
    } else {
      // A prefix that parses must print back to a prefix-compatible plan.
      EXPECT_TRUE(samePlan(*fromText(toText(*p)), *p));
    }
  }
  // Cutting right after a line drops the lines that follow and nothing else.
  const std::string ring = toText(ringRank1());
  size_t steps = 0;
  for (size_t length = 1; length <= ring.size(); ++length) {
    if (ring[length - 1] != '\n') continue;
    Expected<Plan> p = fromText(std::string_view(ring).substr(0, length));
    ASSERT_TRUE(p.ok()) << length;
    EXPECT_EQ(p->channels.empty() ? 0 : p->channels[0].steps.size(), steps);
    if (!p->channels.empty()) ++steps;
  }
  EXPECT_EQ(steps, 6u);
}

TEST(Reader, RejectsMalformedText) {
  const std::string header =
      "plan allreduce algo=ring rank=1 nranks=3 chunksPerBlock=3 blocks in=1 out=1 scratch=1\n";
  struct Case {
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {"", "line 1: expected the 'plan ...' header"},
      {"plan allreduce\n", "line 1: expected 'algo=...', found end of line"},
      {"plan nothing algo=x\n", "line 1: unknown collective 'nothing'"},
      {"plan allreduce algo=x rank=3 nranks=3 chunksPerBlock=1 blocks in=1 out=1 scratch=0\n",
       "line 1: rank 3 is not below nranks 3"},
      {"plan allreduce algo=x rank=0 nranks=99999999999999999999 chunksPerBlock=1\n",
       "nranks must be a decimal integer, found '99999999999999999999'"},
      {"plan allreduce algo=x rank=0 nranks=2 chunksPerBlock=0\n",
       "chunksPerBlock 0 is out of range [1, 1048576]"},
      {"plan allreduce algo=x rank=0 nranks=2 root=2 chunksPerBlock=1\n",
       "root 2 is out of range [-1, 1]"},
      {"plan allreduce algo=x rank=0 nranks=2 chunksPerBlock=1048576 blocks in=4096 out=1 "
       "scratch=0\n",
       "in 4096 is out of range [0, 4095]"},
      {"plan allreduce algo=x rank=0 nranks=2 chunksPerBlock=1 blocks in=1 out=1 scratch=0 x\n",
       "line 1: unexpected 'x'"},
      {"plan allreduce algo=x rank=+1 nranks=2\n", "rank must be a decimal integer, found '+1'"},
      {header + "  0: send to 2 in[1]\n", "line 2: step before the first 'channel' line"},
      {header + "channel 1\n", "line 2: channel 1 out of order, expected channel 0"},
      {header + "channel 0\n  1: send to 2 in[1]\n", "line 3: step 1 out of order"},
      {header + "channel 0\n  0 send to 2 in[1]\n", "line 3: expected step index like '0:'"},
      {header + "channel 0\n  0: sned to 2 in[1]\n", "line 3: unknown step kind 'sned'"},
      {header + "channel 0\n  0: send to 3 in[1]\n", "to peer 3 is out of range [0, 2]"},
      {header + "channel 0\n  0: send to -1 in[1]\n", "to peer -1 is out of range [0, 2]"},
      {header + "channel 0\n  0: send from 0 in[1]\n", "expected 'to', found 'from'"},
      {header + "channel 0\n  0: send to 2 in[3]\n", "src chunk of in 3 is out of range [0, 2]"},
      {header + "channel 0\n  0: send to 2 in[x]\n", "src chunk of in must be a decimal"},
      {header + "channel 0\n  0: send to 2 in[]\n", "src chunk of in must be a decimal"},
      {header + "channel 0\n  0: send to 2 buf[1]\n", "unknown buffer 'buf'"},
      {header + "channel 0\n  0: send to 2 in1]\n", "expected src operand like in[0]"},
      {header + "channel 0\n  0: send to 2 in[1] -> out[0]\n", "unexpected '->'"},
      {header + "channel 0\n  0: recv from 2 out[0]\n", "expected '->', found 'out[0]'"},
      {header + "channel 0\n  0: recv from 2 -> out[3]\n", "dst chunk of out 3 is out of range"},
      {header + "channel 0\n  0: copy in[0] -> scratch[3]\n",
       "dst chunk of scratch 3 is out of range [0, 2]"},
      {header + "channel 0\n  0: send to 2 in[1] lane=65536\n",
       "lane 65536 is out of range [0, 65535]"},
      {header + "channel 0\n  0: send to 2 in[1] finalize lane=1\n", "unexpected 'lane=1'"},
      {header + "channel 0\n  0: send to 2 in[1] after=1\n", "expected after=CHANNEL.STEP"},
      {header + "channel 0\n  0: send to 2 in[1] after=0.-1\n", "after step -1 is out of range"},
      {header + "channel 0\n  0: send to 2 in[1] after=0.1\n",
       "line 3: after=0.1 names no step of this plan"},
      {header + "channel 0\n  0: send to 2 in[1] after=4.0\n", "after=4.0 names no step"},
      {header + "channel 0 1\n", "line 2: unexpected '1'"},
  };
  for (const Case& c : cases) {
    Expected<Plan> p = fromText(c.text);
    EXPECT_FALSE(p.ok()) << c.text;
    EXPECT_THAT(p.message(), HasSubstr(c.error)) << c.text;
  }
  EXPECT_FALSE(fromText("garbage").ok());
  EXPECT_EQ(fromText("garbage").status().code(), ErrorCode::kInvalidArgument);
}

TEST(Reader, RandomBytesNeverCrash) {
  std::mt19937 random(5);
  const std::string valid = toText(ringRank1()) + toText(twoChannels()).substr(100);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = valid;
    for (int edits = 1 + static_cast<int>(random() % 4); edits > 0; --edits) {
      const size_t at = random() % text.size();
      switch (random() % 3) {
        case 0:
          text[at] = static_cast<char>(random() % 256);
          break;
        case 1:
          text.erase(at, 1 + random() % 8);
          break;
        case 2:
          text.insert(at, 1, "0123456789[]:.=- \n"[random() % 18]);
          break;
      }
      if (text.empty()) text = "x";
    }
    Expected<Plan> p = fromText(text);
    if (p.ok()) {
      Expected<Plan> again = fromText(toText(*p));
      ASSERT_TRUE(again.ok()) << again.message() << "\n" << toText(*p);
      EXPECT_TRUE(samePlan(*again, *p));
    } else {
      EXPECT_FALSE(p.message().empty());
    }
  }
}

}  // namespace
}  // namespace grove::plan
