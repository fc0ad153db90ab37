// Terse helpers for writing plan generators.
//
// A generator is rank arithmetic plus a list of steps; spelling every Step field by hand
// buries the arithmetic. These helpers build one Step per call (`send(next, in(c))`,
// `recvReduceSend(prev, next, in(c))`), start a Plan with the call shape filled in, and
// convert bytes to microseconds for the α–β cost formulas. Header-only and pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "algo/registry.hpp"
#include "grove/types.hpp"
#include "plan/plan.hpp"

namespace grove::algo::build {

/// Chunk `c` of the Input, Output or Scratch buffer.
inline plan::ChunkRef in(uint32_t c) { return {plan::BufferKind::kInput, c}; }
inline plan::ChunkRef out(uint32_t c) { return {plan::BufferKind::kOutput, c}; }
inline plan::ChunkRef scratch(uint32_t c) { return {plan::BufferKind::kScratch, c}; }

/// Index of part `part` of block `block` when blocks have `k` chunks.
inline uint32_t chunkOf(int block, int part, int k) {
  return static_cast<uint32_t>(block * k + part);
}

/// `a` modulo `n`, always in [0, n).
inline int mod(int a, int n) { return ((a % n) + n) % n; }

/// True when `n` is a power of two (n >= 1).
inline bool isPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

/// Largest power of two <= n (n >= 1).
inline int floorPowerOfTwo(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/// ceil(log2(n)) for n >= 1.
inline int ceilLog2(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

/// A plan for `request` with the given layout and no channels yet.
inline plan::Plan makePlan(const plan::PlanRequest& request, std::string_view algorithm,
                           uint32_t chunksPerBlock, uint32_t inputBlocks, uint32_t outputBlocks,
                           uint32_t scratchBlocks = 0) {
  plan::Plan p;
  p.collective = request.collective;
  p.algorithm = std::string(algorithm);
  p.rank = request.rank;
  p.nranks = request.nranks;
  p.root = request.root;
  p.chunksPerBlock = chunksPerBlock;
  p.inputBlocks = inputBlocks;
  p.outputBlocks = outputBlocks;
  p.scratchBlocks = scratchBlocks;
  return p;
}

inline plan::Step send(int to, plan::ChunkRef src) {
  plan::Step s;
  s.op = plan::OpKind::kSend;
  s.sendPeer = to;
  s.src = src;
  return s;
}

inline plan::Step recv(int from, plan::ChunkRef dst) {
  plan::Step s;
  s.op = plan::OpKind::kRecv;
  s.recvPeer = from;
  s.dst = dst;
  return s;
}

inline plan::Step recvReduce(int from, plan::ChunkRef dst) {
  plan::Step s;
  s.op = plan::OpKind::kRecvReduce;
  s.recvPeer = from;
  s.dst = dst;
  return s;
}

inline plan::Step copy(plan::ChunkRef src, plan::ChunkRef dst) {
  plan::Step s;
  s.op = plan::OpKind::kCopy;
  s.src = src;
  s.dst = dst;
  return s;
}

inline plan::Step recvReduceSend(int from, int to, plan::ChunkRef src) {
  plan::Step s;
  s.op = plan::OpKind::kRecvReduceSend;
  s.recvPeer = from;
  s.sendPeer = to;
  s.src = src;
  return s;
}

inline plan::Step recvCopySend(int from, int to, plan::ChunkRef dst) {
  plan::Step s;
  s.op = plan::OpKind::kRecvCopySend;
  s.recvPeer = from;
  s.sendPeer = to;
  s.dst = dst;
  return s;
}

inline plan::Step recvReduceCopy(int from, plan::ChunkRef src, plan::ChunkRef dst) {
  plan::Step s;
  s.op = plan::OpKind::kRecvReduceCopy;
  s.recvPeer = from;
  s.src = src;
  s.dst = dst;
  return s;
}

inline plan::Step recvReduceCopySend(int from, int to, plan::ChunkRef src, plan::ChunkRef dst) {
  plan::Step s;
  s.op = plan::OpKind::kRecvReduceCopySend;
  s.recvPeer = from;
  s.sendPeer = to;
  s.src = src;
  s.dst = dst;
  return s;
}

/// `step` marked as producing the complete reduction.
inline plan::Step finalized(plan::Step step) {
  step.finalize = true;
  return step;
}

/// `step` on connection lane `lane`.
inline plan::Step onLane(plan::Step step, uint16_t lane) {
  step.lane = lane;
  return step;
}

/// `step` waiting for step `stepIndex` of channel `channel` (same tile) first.
inline plan::Step after(plan::Step step, int channel, int stepIndex) {
  step.after = {channel, stepIndex};
  return step;
}

/// Bytes of one block of `request`.
inline double blockBytes(const plan::PlanRequest& request) {
  return static_cast<double>(request.count) * static_cast<double>(dataTypeSize(request.type));
}

/// Microseconds to move `bytes` at `gbps` GB/s (10^9 bytes per second = 10^3 bytes per µs).
inline double transferUs(double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e3) : 0; }

/// What an Algorithm::applies returns when the generator cannot build the shape.
inline Status declines(std::string why) {
  return Status::failure(ErrorCode::kInvalidArgument, std::move(why));
}

/// Ok when `request.root` names a rank; otherwise says why not.
inline Status rootInRange(const plan::PlanRequest& request) {
  if (request.root >= 0 && request.root < request.nranks) return {};
  return declines("root " + std::to_string(request.root) + " is not a rank in [0, " +
                  std::to_string(request.nranks) + ")");
}

}  // namespace grove::algo::build
