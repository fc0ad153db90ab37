// Parser of the plan text form (see plan/reader.hpp for the accepted language).
//
// The parser is line-oriented: a header line, then `channel N` lines each followed by its
// step lines. Each line is split into whitespace-separated tokens and consumed left to right,
// so every error can name the line and the token that was wrong. Nothing throws: every
// reading step returns false once its line has failed, and fromText returns the first
// failure as its Status.
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

// The tokens of one line and a cursor over them. Every reading method returns false once
// the line has failed; the first failure, naming the line, is kept in `problem`.
class Line {
 public:
  Line(int number, std::string_view text, std::string* problem)
      : number_(number), problem_(problem) {
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

  /// Records `what` as this line's failure; returns false, for `return line.fail(...)`.
  bool fail(const std::string& what) const {
    if (problem_->empty()) *problem_ = "line " + std::to_string(number_) + ": " + what;
    return false;
  }

  bool take(std::string_view what, std::string_view* token) {
    if (atEnd()) return fail("expected " + std::string(what) + ", found end of line");
    *token = tokens_[next_++];
    return true;
  }

  bool expect(std::string_view word) {
    std::string_view token;
    if (!take("'" + std::string(word) + "'", &token)) return false;
    if (token != word) {
      return fail("expected '" + std::string(word) + "', found '" + std::string(token) + "'");
    }
    return true;
  }

  // A decimal integer in [lo, hi], named `what` in messages.
  bool number(std::string_view token, std::string_view what, int64_t lo, int64_t hi,
              int64_t* value) const {
    const char* end = token.data() + token.size();
    auto [ptr, ec] = std::from_chars(token.data(), end, *value);
    if (token.empty() || ec != std::errc() || ptr != end) {
      return fail(std::string(what) + " must be a decimal integer, found '" + std::string(token) +
                  "'");
    }
    if (*value < lo || *value > hi) {
      return fail(std::string(what) + " " + std::to_string(*value) + " is out of range [" +
                  std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return true;
  }

  // The value of a `key=value` token.
  bool keyValue(std::string_view key, std::string_view* value) {
    std::string prefix = std::string(key) + "=";
    std::string_view token;
    if (!take("'" + prefix + "...'", &token)) return false;
    if (token.substr(0, prefix.size()) != prefix) {
      return fail("expected '" + prefix + "...', found '" + std::string(token) + "'");
    }
    *value = token.substr(prefix.size());
    return true;
  }

  bool keyNumber(std::string_view key, int64_t lo, int64_t hi, int64_t* value) {
    std::string_view text;
    return keyValue(key, &text) && number(text, key, lo, hi, value);
  }

  bool expectEnd() const {
    if (!atEnd()) return fail("unexpected '" + std::string(peek()) + "'");
    return true;
  }

 private:
  static bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

  int number_;
  std::string* problem_;
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

bool parseHeader(Line& line, Plan& plan) {
  std::string_view name;
  if (!line.expect("plan") || !line.take("a collective name", &name)) return false;
  if (!parseName(name, kCollectiveCount, &plan.collective)) {
    return line.fail("unknown collective '" + std::string(name) + "'");
  }
  std::string_view algorithm;
  int64_t rank = 0;
  int64_t nranks = 0;
  if (!line.keyValue("algo", &algorithm) || !line.keyNumber("rank", 0, kMaxRanks - 1, &rank) ||
      !line.keyNumber("nranks", 1, kMaxRanks, &nranks)) {
    return false;
  }
  plan.algorithm = std::string(algorithm);
  plan.nranks = static_cast<int>(nranks);
  if (rank >= plan.nranks) {
    return line.fail("rank " + std::to_string(rank) + " is not below nranks " +
                     std::to_string(plan.nranks));
  }
  plan.rank = static_cast<int>(rank);
  plan.root = -1;
  if (line.peek().substr(0, 5) == "root=") {
    int64_t root = 0;
    if (!line.keyNumber("root", -1, plan.nranks - 1, &root)) return false;
    plan.root = static_cast<int>(root);
  }
  int64_t chunksPerBlock = 0;
  if (!line.keyNumber("chunksPerBlock", 1, kMaxChunksPerBlock, &chunksPerBlock)) return false;
  plan.chunksPerBlock = static_cast<uint32_t>(chunksPerBlock);
  const int64_t maxBlocks = kMaxChunks / plan.chunksPerBlock;
  int64_t in = 0;
  int64_t out = 0;
  int64_t scratch = 0;
  if (!line.expect("blocks") || !line.keyNumber("in", 0, maxBlocks, &in) ||
      !line.keyNumber("out", 0, maxBlocks, &out) ||
      !line.keyNumber("scratch", 0, maxBlocks, &scratch)) {
    return false;
  }
  plan.inputBlocks = static_cast<uint32_t>(in);
  plan.outputBlocks = static_cast<uint32_t>(out);
  plan.scratchBlocks = static_cast<uint32_t>(scratch);
  if (line.peek() == "onesided") {
    std::string_view token;
    line.take("onesided", &token);
    plan.oneSided = true;
  }
  return line.expectEnd();
}

bool parseChunk(Line& line, const Plan& plan, std::string_view role, ChunkRef* ref) {
  std::string_view token;
  if (!line.take(std::string(role) + " operand", &token)) return false;
  size_t open = token.find('[');
  if (open == std::string_view::npos || token.back() != ']') {
    return line.fail("expected " + std::string(role) + " operand like in[0], found '" +
                     std::string(token) + "'");
  }
  std::string_view buffer = token.substr(0, open);
  if (buffer == "in") {
    ref->buffer = BufferKind::kInput;
  } else if (buffer == "out") {
    ref->buffer = BufferKind::kOutput;
  } else if (buffer == "scratch") {
    ref->buffer = BufferKind::kScratch;
  } else {
    return line.fail("unknown buffer '" + std::string(buffer) + "' in " + std::string(role) +
                     " operand (expected in, out or scratch)");
  }
  const int64_t chunks = plan.chunks(ref->buffer);
  std::string_view index = token.substr(open + 1, token.size() - open - 2);
  if (chunks == 0) {
    return line.fail(std::string(role) + " operand names empty buffer " + std::string(buffer));
  }
  int64_t chunk = 0;
  if (!line.number(index, std::string(role) + " chunk of " + std::string(buffer), 0, chunks - 1,
                   &chunk)) {
    return false;
  }
  ref->chunk = static_cast<uint32_t>(chunk);
  return true;
}

bool parsePeer(Line& line, const Plan& plan, std::string_view word, int32_t* peer) {
  std::string_view token;
  int64_t value = 0;
  if (!line.expect(word) || !line.take("peer", &token) ||
      !line.number(token, std::string(word) + " peer", 0, plan.nranks - 1, &value)) {
    return false;
  }
  *peer = static_cast<int32_t>(value);
  return true;
}

bool parseStep(Line& line, const Plan& plan, size_t expectedIndex, Step* out) {
  std::string_view label;
  if (!line.take("step index", &label)) return false;
  if (label.back() != ':') {
    return line.fail("expected step index like '0:', found '" + std::string(label) + "'");
  }
  int64_t index = 0;
  if (!line.number(label.substr(0, label.size() - 1), "step index", 0,
                   std::numeric_limits<int32_t>::max(), &index)) {
    return false;
  }
  if (static_cast<size_t>(index) != expectedIndex) {
    return line.fail("step " + std::to_string(index) + " out of order, expected step " +
                     std::to_string(expectedIndex));
  }
  Step step;
  std::string_view op;
  if (!line.take("a step kind", &op)) return false;
  if (!parseName(op, kOpKindCount, &step.op)) {
    return line.fail("unknown step kind '" + std::string(op) + "'");
  }
  if (namesRecvPeer(step.op) && !parsePeer(line, plan, "from", &step.recvPeer)) return false;
  if (sends(step.op) && !parsePeer(line, plan, "to", &step.sendPeer)) return false;
  if (readsSrc(step.op) && !parseChunk(line, plan, "src", &step.src)) return false;
  if (writesDst(step.op) && (!line.expect("->") || !parseChunk(line, plan, "dst", &step.dst))) {
    return false;
  }
  if (line.peek().substr(0, 5) == "lane=") {
    int64_t lane = 0;
    if (!line.keyNumber("lane", 0, std::numeric_limits<uint16_t>::max(), &lane)) return false;
    step.lane = static_cast<uint16_t>(lane);
  }
  if (line.peek() == "finalize") {
    std::string_view token;
    line.take("finalize", &token);
    step.finalize = true;
  }
  if (line.peek().substr(0, 6) == "after=") {
    std::string_view value;
    if (!line.keyValue("after", &value)) return false;
    size_t dot = value.find('.');
    if (dot == std::string_view::npos) {
      return line.fail("expected after=CHANNEL.STEP, found 'after=" + std::string(value) + "'");
    }
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    int64_t channel = 0;
    int64_t afterStep = 0;
    if (!line.number(value.substr(0, dot), "after channel", 0, kMax, &channel) ||
        !line.number(value.substr(dot + 1), "after step", 0, kMax, &afterStep)) {
      return false;
    }
    step.after = {static_cast<int32_t>(channel), static_cast<int32_t>(afterStep)};
  }
  *out = step;
  return line.expectEnd();
}

// `after` may name a later channel, so it is checked once every channel is known.
Status checkAfter(const Plan& plan, const std::vector<int>& stepLines) {
  size_t flat = 0;
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    for (size_t s = 0; s < plan.channels[c].steps.size(); ++s, ++flat) {
      const StepRef& after = plan.channels[c].steps[s].after;
      if (after.channel == -1) continue;
      if (static_cast<size_t>(after.channel) >= plan.channels.size() ||
          static_cast<size_t>(after.step) >=
              plan.channels[static_cast<size_t>(after.channel)].steps.size()) {
        return Status::failure(ErrorCode::kInvalidArgument,
                               "line " + std::to_string(stepLines[flat]) +
                                   ": after=" + std::to_string(after.channel) + "." +
                                   std::to_string(after.step) + " names no step of this plan");
      }
    }
  }
  return {};
}

bool parseChannelLine(Line& line, Plan& plan) {
  std::string_view token;
  int64_t index = 0;
  if (!line.take("channel", &token) || !line.take("channel index", &token) ||
      !line.number(token, "channel index", 0, std::numeric_limits<int32_t>::max(), &index)) {
    return false;
  }
  if (static_cast<size_t>(index) != plan.channels.size()) {
    return line.fail("channel " + std::to_string(index) + " out of order, expected channel " +
                     std::to_string(plan.channels.size()));
  }
  if (!line.expectEnd()) return false;
  plan.channels.emplace_back();
  return true;
}

}  // namespace

Expected<Plan> fromText(std::string_view text) {
  Plan plan;
  bool haveHeader = false;
  std::vector<int> stepLines;
  std::string problem;
  const auto failed = [&problem] {
    return Status::failure(ErrorCode::kInvalidArgument, std::move(problem));
  };
  int number = 0;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    Line line(++number, text.substr(begin, end - begin), &problem);
    begin = end + 1;
    if (line.empty()) continue;
    if (!haveHeader) {
      if (!parseHeader(line, plan)) return failed();
      haveHeader = true;
    } else if (line.peek() == "channel") {
      if (!parseChannelLine(line, plan)) return failed();
    } else {
      if (plan.channels.empty()) {
        line.fail("step before the first 'channel' line");
        return failed();
      }
      std::vector<Step>& steps = plan.channels.back().steps;
      Step step;
      if (!parseStep(line, plan, steps.size(), &step)) return failed();
      steps.push_back(step);
      stepLines.push_back(number);
    }
  }
  if (!haveHeader) {
    return Status::failure(ErrorCode::kInvalidArgument,
                           "line 1: expected the 'plan ...' header, found no text");
  }
  if (Status after = checkAfter(plan, stepLines); !after.ok()) return after;
  return plan;
}

}  // namespace grove::plan
