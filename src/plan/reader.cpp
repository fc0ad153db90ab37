// Parser of the plan text form (see plan/reader.hpp for the accepted language).
//
// The parser is line-oriented: a header line, then `channel N` lines each followed by its
// step lines. Each line is split into whitespace-separated tokens and consumed left to right,
// so every error can name the line and the token that was wrong. No exceptions escape:
// failures are reported through a small Failure value thrown and caught inside fromText.
#include "plan/reader.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <vector>

namespace grove::plan {
namespace {

constexpr int64_t kMaxRanks = int64_t{1} << 20;
constexpr int64_t kMaxChunksPerBlock = int64_t{1} << 20;
constexpr int64_t kMaxChunks = std::numeric_limits<uint32_t>::max();

struct Failure {
  std::string message;
};

// The tokens of one line and a cursor over them.
class Line {
 public:
  Line(int number, std::string_view text) : number_(number) {
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && isSpace(text[i])) ++i;
      size_t start = i;
      while (i < text.size() && !isSpace(text[i])) ++i;
      if (i > start) tokens_.push_back(text.substr(start, i - start));
    }
  }

  bool empty() const { return tokens_.empty(); }
  bool atEnd() const { return next_ >= tokens_.size(); }
  std::string_view peek() const { return atEnd() ? std::string_view() : tokens_[next_]; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Failure{"line " + std::to_string(number_) + ": " + what};
  }

  std::string_view take(std::string_view what) {
    if (atEnd()) fail("expected " + std::string(what) + ", found end of line");
    return tokens_[next_++];
  }

  void expect(std::string_view word) {
    std::string_view token = take("'" + std::string(word) + "'");
    if (token != word) {
      fail("expected '" + std::string(word) + "', found '" + std::string(token) + "'");
    }
  }

  // A decimal integer in [lo, hi], named `what` in messages.
  int64_t number(std::string_view token, std::string_view what, int64_t lo, int64_t hi) const {
    int64_t value = 0;
    const char* end = token.data() + token.size();
    auto [ptr, ec] = std::from_chars(token.data(), end, value);
    if (token.empty() || ec != std::errc() || ptr != end) {
      fail(std::string(what) + " must be a decimal integer, found '" + std::string(token) + "'");
    }
    if (value < lo || value > hi) {
      fail(std::string(what) + " " + std::to_string(value) + " is out of range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return value;
  }

  // The value of a `key=value` token.
  std::string_view keyValue(std::string_view key) {
    std::string prefix = std::string(key) + "=";
    std::string_view token = take("'" + prefix + "...'");
    if (token.substr(0, prefix.size()) != prefix) {
      fail("expected '" + prefix + "...', found '" + std::string(token) + "'");
    }
    return token.substr(prefix.size());
  }

  int64_t keyNumber(std::string_view key, int64_t lo, int64_t hi) {
    return number(keyValue(key), key, lo, hi);
  }

  void expectEnd() const {
    if (!atEnd()) fail("unexpected '" + std::string(peek()) + "'");
  }

 private:
  static bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

  int number_;
  std::vector<std::string_view> tokens_;
  size_t next_ = 0;
};

template <typename Enum>
bool parseName(std::string_view token, int count, Enum* out) {
  for (int i = 0; i < count; ++i) {
    Enum value = static_cast<Enum>(i);
    if (token == toString(value)) {
      *out = value;
      return true;
    }
  }
  return false;
}

void parseHeader(Line& line, Plan& plan) {
  line.expect("plan");
  std::string_view name = line.take("a collective name");
  if (!parseName(name, kCollectiveCount, &plan.collective)) {
    line.fail("unknown collective '" + std::string(name) + "'");
  }
  plan.algorithm = std::string(line.keyValue("algo"));
  int64_t rank = line.keyNumber("rank", 0, kMaxRanks - 1);
  plan.nranks = static_cast<int>(line.keyNumber("nranks", 1, kMaxRanks));
  if (rank >= plan.nranks) {
    line.fail("rank " + std::to_string(rank) + " is not below nranks " +
              std::to_string(plan.nranks));
  }
  plan.rank = static_cast<int>(rank);
  plan.root = -1;
  if (line.peek().substr(0, 5) == "root=") {
    plan.root = static_cast<int>(line.keyNumber("root", -1, plan.nranks - 1));
  }
  plan.chunksPerBlock =
      static_cast<uint32_t>(line.keyNumber("chunksPerBlock", 1, kMaxChunksPerBlock));
  line.expect("blocks");
  const int64_t maxBlocks = kMaxChunks / plan.chunksPerBlock;
  plan.inputBlocks = static_cast<uint32_t>(line.keyNumber("in", 0, maxBlocks));
  plan.outputBlocks = static_cast<uint32_t>(line.keyNumber("out", 0, maxBlocks));
  plan.scratchBlocks = static_cast<uint32_t>(line.keyNumber("scratch", 0, maxBlocks));
  if (line.peek() == "onesided") {
    line.take("onesided");
    plan.oneSided = true;
  }
  line.expectEnd();
}

ChunkRef parseChunk(Line& line, const Plan& plan, std::string_view role) {
  std::string_view token = line.take(std::string(role) + " operand");
  ChunkRef ref;
  size_t open = token.find('[');
  if (open == std::string_view::npos || token.back() != ']') {
    line.fail("expected " + std::string(role) + " operand like in[0], found '" +
              std::string(token) + "'");
  }
  std::string_view buffer = token.substr(0, open);
  if (buffer == "in") {
    ref.buffer = BufferKind::kInput;
  } else if (buffer == "out") {
    ref.buffer = BufferKind::kOutput;
  } else if (buffer == "scratch") {
    ref.buffer = BufferKind::kScratch;
  } else {
    line.fail("unknown buffer '" + std::string(buffer) + "' in " + std::string(role) +
              " operand (expected in, out or scratch)");
  }
  const int64_t chunks = plan.chunks(ref.buffer);
  std::string_view index = token.substr(open + 1, token.size() - open - 2);
  if (chunks == 0)
    line.fail(std::string(role) + " operand names empty buffer " + std::string(buffer));
  ref.chunk = static_cast<uint32_t>(
      line.number(index, std::string(role) + " chunk of " + std::string(buffer), 0, chunks - 1));
  return ref;
}

Step parseStep(Line& line, const Plan& plan, size_t expectedIndex) {
  std::string_view label = line.take("step index");
  if (label.back() != ':')
    line.fail("expected step index like '0:', found '" + std::string(label) + "'");
  int64_t index = line.number(label.substr(0, label.size() - 1), "step index", 0,
                              std::numeric_limits<int32_t>::max());
  if (static_cast<size_t>(index) != expectedIndex) {
    line.fail("step " + std::to_string(index) + " out of order, expected step " +
              std::to_string(expectedIndex));
  }
  Step step;
  std::string_view op = line.take("a step kind");
  if (!parseName(op, kOpKindCount, &step.op))
    line.fail("unknown step kind '" + std::string(op) + "'");
  if (namesRecvPeer(step.op)) {
    line.expect("from");
    step.recvPeer =
        static_cast<int32_t>(line.number(line.take("peer"), "from peer", 0, plan.nranks - 1));
  }
  if (sends(step.op)) {
    line.expect("to");
    step.sendPeer =
        static_cast<int32_t>(line.number(line.take("peer"), "to peer", 0, plan.nranks - 1));
  }
  if (readsSrc(step.op)) step.src = parseChunk(line, plan, "src");
  if (writesDst(step.op)) {
    line.expect("->");
    step.dst = parseChunk(line, plan, "dst");
  }
  if (line.peek().substr(0, 5) == "lane=") {
    step.lane =
        static_cast<uint16_t>(line.keyNumber("lane", 0, std::numeric_limits<uint16_t>::max()));
  }
  if (line.peek() == "finalize") {
    line.take("finalize");
    step.finalize = true;
  }
  if (line.peek().substr(0, 6) == "after=") {
    std::string_view value = line.keyValue("after");
    size_t dot = value.find('.');
    if (dot == std::string_view::npos) {
      line.fail("expected after=CHANNEL.STEP, found 'after=" + std::string(value) + "'");
    }
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    step.after.channel =
        static_cast<int32_t>(line.number(value.substr(0, dot), "after channel", 0, kMax));
    step.after.step =
        static_cast<int32_t>(line.number(value.substr(dot + 1), "after step", 0, kMax));
  }
  line.expectEnd();
  return step;
}

// `after` may name a later channel, so it is checked once every channel is known.
void checkAfter(const Plan& plan, const std::vector<int>& stepLines) {
  size_t flat = 0;
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    for (size_t s = 0; s < plan.channels[c].steps.size(); ++s, ++flat) {
      const StepRef& after = plan.channels[c].steps[s].after;
      if (after.channel == -1) continue;
      if (static_cast<size_t>(after.channel) >= plan.channels.size() ||
          static_cast<size_t>(after.step) >=
              plan.channels[static_cast<size_t>(after.channel)].steps.size()) {
        throw Failure{"line " + std::to_string(stepLines[flat]) +
                      ": after=" + std::to_string(after.channel) + "." +
                      std::to_string(after.step) + " names no step of this plan"};
      }
    }
  }
}

Plan parse(std::string_view text) {
  Plan plan;
  bool haveHeader = false;
  std::vector<int> stepLines;
  int number = 0;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    Line line(++number, text.substr(begin, end - begin));
    begin = end + 1;
    if (line.empty()) continue;
    if (!haveHeader) {
      parseHeader(line, plan);
      haveHeader = true;
    } else if (line.peek() == "channel") {
      line.take("channel");
      int64_t index = line.number(line.take("channel index"), "channel index", 0,
                                  std::numeric_limits<int32_t>::max());
      if (static_cast<size_t>(index) != plan.channels.size()) {
        line.fail("channel " + std::to_string(index) + " out of order, expected channel " +
                  std::to_string(plan.channels.size()));
      }
      line.expectEnd();
      plan.channels.emplace_back();
    } else {
      if (plan.channels.empty()) line.fail("step before the first 'channel' line");
      std::vector<Step>& steps = plan.channels.back().steps;
      steps.push_back(parseStep(line, plan, steps.size()));
      stepLines.push_back(number);
    }
  }
  if (!haveHeader) throw Failure{"line 1: expected the 'plan ...' header, found no text"};
  checkAfter(plan, stepLines);
  return plan;
}

}  // namespace

Expected<Plan> fromText(std::string_view text) {
  try {
    return parse(text);
  } catch (const Failure& failure) {
    return Status::failure(ErrorCode::kInvalidArgument, failure.message);
  }
}

}  // namespace grove::plan
