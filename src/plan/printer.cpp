// Text form of a plan.
//
// The text is for people first (`grove plan`, traces, test failures) and is also the save
// format that plan/reader.cpp parses back, so every field that matters is printed and nothing
// is printed that the kind does not use: a reader of the text never has to know which
// operands a kind ignores.
#include "plan/printer.hpp"

#include <fmt/format.h>

namespace grove::plan {
namespace {

const char* bufferName(BufferKind buffer) {
  switch (buffer) {
    case BufferKind::kInput:
      return "in";
    case BufferKind::kOutput:
      return "out";
    case BufferKind::kScratch:
      return "scratch";
  }
  return "?";
}

void appendChunk(std::string& text, const ChunkRef& ref) {
  text += fmt::format("{}[{}]", bufferName(ref.buffer), ref.chunk);
}

// The step after its op name: peers, operands and the optional clauses.
void appendOperands(std::string& text, const Step& step) {
  if (namesRecvPeer(step.op)) text += fmt::format(" from {}", step.recvPeer);
  if (sends(step.op)) text += fmt::format(" to {}", step.sendPeer);
  if (readsSrc(step.op)) {
    text += ' ';
    appendChunk(text, step.src);
  }
  if (writesDst(step.op)) {
    text += " -> ";
    appendChunk(text, step.dst);
  }
  if (step.lane != 0) text += fmt::format(" lane={}", step.lane);
  if (step.finalize) text += " finalize";
  if (step.after.channel != -1) {
    text += fmt::format(" after={}.{}", step.after.channel, step.after.step);
  }
}

}  // namespace

std::string toText(const Step& step) {
  std::string text = toString(step.op);
  appendOperands(text, step);
  return text;
}

std::string toText(const Plan& plan) {
  std::string text = fmt::format("plan {} algo={} rank={} nranks={}", toString(plan.collective),
                                 plan.algorithm, plan.rank, plan.nranks);
  if (plan.root != -1) text += fmt::format(" root={}", plan.root);
  text += fmt::format(" chunksPerBlock={} blocks in={} out={} scratch={}", plan.chunksPerBlock,
                      plan.inputBlocks, plan.outputBlocks, plan.scratchBlocks);
  text += plan.oneSided ? " onesided\n" : "\n";
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    text += fmt::format("channel {}\n", c);
    const std::vector<Step>& steps = plan.channels[c].steps;
    for (size_t s = 0; s < steps.size(); ++s) {
      text += fmt::format("  {}: {:<6}", s, toString(steps[s].op));
      appendOperands(text, steps[s]);
      text += '\n';
    }
  }
  return text;
}

}  // namespace grove::plan
