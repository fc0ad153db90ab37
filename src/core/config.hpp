// Settings read from the environment when a communicator is created. Every rank of a
// communicator must see the same values for the ones that shape the wire (slot size, depth).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/parameters.hpp"

namespace grove::detail {

struct Config {
  /// GROVE_ALGO: algorithm choice in NCCL_ALGO syntax (see algo::select).
  std::string algo;
  /// GROVE_TIMEOUT (seconds, default 300): the longest any wait may take.
  std::chrono::milliseconds timeout{300'000};
  /// GROVE_HEARTBEAT_TIMEOUT (seconds, default 10, 0 = off, at least 2): a TCP peer from
  /// which nothing arrived for this long while this rank waits is declared failed (peers
  /// send a heartbeat after 1 s without traffic).
  std::chrono::milliseconds heartbeatTimeout{10'000};
  /// GROVE_SLOT_BYTES (default 256 KiB, a multiple of 64): bytes per FIFO slot; also the
  /// executor's tile size.
  size_t slotBytes = common::defaultInteger(common::Param::kSlotBytes);
  /// GROVE_FIFO_DEPTH (default 4, at least 2: the ring's fused steps hold one slot while
  /// they wait for the next): slots per FIFO.
  uint32_t fifoDepth = common::defaultInteger(common::Param::kFifoDepth);
  /// GROVE_SPIN_US (default 200; -1 here means the default): how long a waiting rank polls
  /// before it sleeps on its doorbell. Polling yields the core every 64 polls after its
  /// first 2 microseconds (every 8 polls from the start when the host's ranks outnumber its
  /// CPUs), because on a shared machine the peer being waited for may need exactly this
  /// core. Sleeping is cheap for the sleeper but costs a futex wake (10-250 us on a virtual
  /// machine) before it runs again; comm_wait.cpp has the measurements behind the default.
  std::chrono::microseconds spin{-1};

  /// GROVE_TOPO_FILE: the communicator's topology, a preset spec ("dgx1v:0,1,4") or a JSON
  /// file path (see docs/topology.md); empty = none. Read once per communicator; plans that
  /// need a topology (packed trees) apply only with one, and the TCP transport then dials
  /// each peer at the address the topology gives for the link to it.
  std::string topoFile;

  /// GROVE_REQUIRE_SECRET=1: a process job without a secret (GROVE_SECRET or
  /// GROVE_SECRET_FILE) refuses to start instead of running unauthenticated.
  bool requireSecret = false;

  /// GROVE_VERIFY=1: prove every new plan with the symbolic verifier before first use.
  bool verifyPlans = false;

  /// GROVE_CHECK=1: before each collective, every rank's full signature (collective, count,
  /// type, operator, root, algorithm) is exchanged and compared (like
  /// TORCH_DISTRIBUTED_DEBUG=DETAIL); a difference fails the call on every rank with
  /// kInvalidUsage naming each rank that differs. Costs one small allgather per call.
  bool checkSignatures = false;
  /// GROVE_CHECKSUM=1: every message carries a checksum of its payload, verified by its
  /// receiver; a mismatch fails the call with kSystemError naming the link.
  bool checksum = false;
  /// GROVE_FAULT_DELAY_US (tests only, default 0): this rank sleeps this long before each
  /// message it sends, standing for a slow peer (tests/fault: slow peers must still finish
  /// correctly, and their heartbeats keep them from being declared failed).
  std::chrono::microseconds faultDelay{0};
  /// GROVE_FAULT_RANK (tests only, default -1 = every rank): the only rank GROVE_FAULT_DELAY_US
  /// applies to.
  int faultRank = -1;

  /// GROVE_DIRECT (default 1): single-host allreduce, reducescatter, allgather and broadcast
  /// of at least directMinBytes read the peers' buffers in place (algo/direct.cpp) when every
  /// rank is on this host and every buffer a peer reads can be mapped (threads; processes:
  /// memory from grove::allocate) — allgather and broadcast also when buffers must be copied
  /// by the kernel (process_vm_readv), which beats the FIFOs for them. 2: kernel copies for
  /// all four. 0: never. Every rank must see the same value.
  bool direct = true;
  bool directCopies = false;  ///< GROVE_DIRECT=2.
  /// GROVE_DIRECT_MIN_BYTES (default 1 MiB): the smallest call (the larger of its send and
  /// receive buffers, in bytes) that goes direct; below it the FIFOs' pipelined plans are as
  /// fast or faster (docs/tuning.md has the measurements). Every rank must see the same value.
  size_t directMinBytes = common::defaultInteger(common::Param::kDirectMinBytes);

  /// GROVE_TRACE=PATH: write a Chrome trace of every call and step when the communicator is
  /// destroyed ("%r" in PATH becomes the rank; see docs/tracing.md). Empty: no tracing.
  std::string tracePath;
  /// GROVE_TRACE_STEPS (default 262144): step records kept per rank; later ones are dropped
  /// and counted. Reserved up front (about 80 bytes each) so tracing never allocates.
  size_t traceSteps = common::defaultInteger(common::Param::kTraceSteps);

  /// GROVE_TRANSPORT=tcp: TCP even between processes of one host.
  bool forceTcp = false;
  /// GROVE_SOCKET_IFNAME: interfaces for TCP (NCCL syntax), empty = automatic.
  std::string socketInterfaces;
  /// GROVE_TCP_DIRECT_BYTES: the largest TCP frame a waiting rank moves on its own thread.
  size_t tcpDirectBytes = 67108864;
  /// GROVE_TCP_SHARED: one TCP connection carries both directions of a pair's lane.
  bool tcpShared = true;
  /// GROVE_HOST_ID: overrides which processes count as one host; empty = detected.
  std::string hostId;
  /// GROVE_NIC_SPEED: this host's NIC rate in Mbit/s (0: unknown, topo::kDefaultNicGbit).
  /// When not given, a process's bootstrap reads it from the NICs' drivers (sysfs,
  /// transport/tcp/link_speed.hpp) where they report one.
  int64_t nicSpeedMbps = 0;
  /// Where nicSpeedMbps came from, for the logs: "GROVE_NIC_SPEED", or what was read.
  std::string nicSpeedSource = "GROVE_NIC_SPEED";
  /// GROVE_COMPRESS: which links compress their messages (core/link_compression.hpp).
  enum class Compress { kAuto, kOn, kOff };
  Compress compress = Compress::kAuto;
  /// GROVE_JOB_ID: the launcher's job id (names shared-memory segments); empty = none.
  std::string jobId;
  /// GROVE_NSOCKS was set: it is ignored, and the bootstrap says so.
  bool nsocksGiven = false;
  /// GROVE_FAULT_CORRUPT_FRAME (tests only, 0 = off): every incoming TCP connection flips a
  /// bit of the N-th data frame it reads.
  uint64_t faultCorruptFrame = 0;

  /// Reads the knobs above from the parameter table (common/parameters.hpp): `overrides`
  /// (grove::Options) first, then the environment, then the defaults. Malformed values throw
  /// grove::Error(kInvalidArgument) naming the variable, its value and what was expected.
  static Config resolve(const common::ParamOverrides& overrides,
                        const common::Getenv& getenv = common::processEnvironment);
};

}  // namespace grove::detail
