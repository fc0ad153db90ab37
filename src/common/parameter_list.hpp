// Every grove knob, declared once: P(Id, spec fields...) inside GROVE_PARAMETER_LIST, in the order
// of ParamSpec's fields (parameters.hpp). Everything else — the Param enum, validation, the
// defaults the code uses, `grove config`, the README check — comes from this list.
//
// Fields: name, kind, scope, fallback (the default as the environment spells it; "" means
// unset), unit, min, max, multipleOf, choices ("a|b|c"), secret (never printed), doc.
// Included only by parameters.hpp, which expands the list into the Param enum and the table.

// clang-format off
#define GROVE_PARAMETER_LIST(P)                                                                  \
  /* ---- per communicator ---- */                                                               \
  P(Algo, "GROVE_ALGO", ParamKind::kString, ParamScope::kCommunicator, "", "", 0, 0, 1, "", false, \
    "algorithm choice in NCCL_ALGO syntax: ring, allreduce:tree;broadcast:chain, ^tree")           \
  P(Timeout, "GROVE_TIMEOUT", ParamKind::kInteger, ParamScope::kCommunicator, "300", "seconds",  \
    1, 604800, 1, "", false, "the longest any wait may take before the call fails")              \
  P(HeartbeatTimeout, "GROVE_HEARTBEAT_TIMEOUT", ParamKind::kInteger,                            \
    ParamScope::kCommunicator, "10", "seconds", 0, 604800, 1, "", false,                         \
    "silence after which a peer is declared failed (0 = off, 1 is taken as 2)")                  \
  P(SlotBytes, "GROVE_SLOT_BYTES", ParamKind::kInteger, ParamScope::kCommunicator, "262144",     \
    "bytes", 4096, 67108864, 64, "", false,                                                      \
    "bytes per FIFO slot, also the executor's tile; equal on every rank")                        \
  P(FifoDepth, "GROVE_FIFO_DEPTH", ParamKind::kInteger, ParamScope::kCommunicator, "4", "slots", \
    2, 64, 1, "", false, "slots per FIFO (fused steps hold one while they wait for the next)")   \
  P(SpinUs, "GROVE_SPIN_US", ParamKind::kInteger, ParamScope::kCommunicator, "200",              \
    "microseconds", 0, 1000000, 1, "", false,                                                    \
    "how long a waiting rank polls before it sleeps on its doorbell")                            \
  P(TopoFile, "GROVE_TOPO_FILE", ParamKind::kString, ParamScope::kCommunicator, "", "", 0, 0, 1, \
    "", false, "the topology: a preset spec (dgx1v:0,1,4) or a JSON file")                       \
  P(RequireSecret, "GROVE_REQUIRE_SECRET", ParamKind::kBoolean, ParamScope::kCommunicator, "0",  \
    "", 0, 1, 1, "", false, "1: a process job without a secret refuses to start")                \
  P(Verify, "GROVE_VERIFY", ParamKind::kBoolean, ParamScope::kCommunicator, "0", "", 0, 1, 1, "",\
    false, "1: prove every new plan with the symbolic verifier before first use")                \
  P(Check, "GROVE_CHECK", ParamKind::kBoolean, ParamScope::kCommunicator, "0", "", 0, 1, 1, "",  \
    false, "1: compare every rank's call signature before each collective")                      \
  P(Checksum, "GROVE_CHECKSUM", ParamKind::kBoolean, ParamScope::kCommunicator, "0", "", 0, 1, 1,\
    "", false, "1: checksum every message's payload end to end")                                 \
  P(Direct, "GROVE_DIRECT", ParamKind::kEnum, ParamScope::kCommunicator, "1", "", 0, 0, 1,       \
    "0|1|2", false, "single-host zero copy: 0 never, 1 mapped buffers, 2 kernel copies for all") \
  P(DirectMinBytes, "GROVE_DIRECT_MIN_BYTES", ParamKind::kInteger, ParamScope::kCommunicator,    \
    "1048576", "bytes", 1, 1125899906842624, 1, "", false,                                       \
    "the smallest call (larger of send and receive buffer) that goes direct")                    \
  P(Trace, "GROVE_TRACE", ParamKind::kString, ParamScope::kCommunicator, "", "", 0, 0, 1, "",    \
    false, "write a Chrome trace per rank to this path (%r = rank) when the communicator ends")  \
  P(TraceSteps, "GROVE_TRACE_STEPS", ParamKind::kInteger, ParamScope::kCommunicator, "262144",   \
    "records", 1, 67108864, 1, "", false, "step records a trace keeps per rank")                 \
  P(Transport, "GROVE_TRANSPORT", ParamKind::kEnum, ParamScope::kCommunicator, "auto", "", 0, 0, \
    1, "auto|tcp", false, "tcp: use TCP even between processes of one host")                     \
  P(SocketIfname, "GROVE_SOCKET_IFNAME", ParamKind::kString, ParamScope::kCommunicator, "", "",  \
    0, 0, 1, "", false, "interfaces for TCP in NCCL_SOCKET_IFNAME syntax (eth,ib  ^lo  =eth0); all chosen are used")  \
  P(TcpDirectBytes, "GROVE_TCP_DIRECT_BYTES", ParamKind::kInteger, ParamScope::kCommunicator,  \
    "67108864", "bytes", 0, 67108864, 1, "", false,                                              \
    "largest TCP frame a waiting rank sends or reads on its own thread (0: the network thread)") \
  P(TcpShared, "GROVE_TCP_SHARED", ParamKind::kBoolean, ParamScope::kCommunicator, "1", "", 0,  \
    1, 1, "", false,                                                                             \
    "one TCP connection carries both directions of a pair (0: one per direction; one NIC only)") \
  P(NicSpeed, "GROVE_NIC_SPEED", ParamKind::kInteger, ParamScope::kCommunicator, "0", "Mbit/s", \
    0, 100000000, 1, "", false,                                                                  \
    "this host's NIC rate for the topology built from the hosts (0: sysfs, else 100 Gbit/s)")  \
  P(Compress, "GROVE_COMPRESS", ParamKind::kEnum, ParamScope::kCommunicator, "auto", "", 0, 0, \
    1, "auto|on|off", false,                                                                     \
    "compress messages over TCP (auto: when the NIC rate is below the codec's rate)")            \
  P(HostId, "GROVE_HOST_ID", ParamKind::kString, ParamScope::kCommunicator, "", "", 0, 0, 1, "", \
    false, "overrides which processes count as one host")                                        \
  P(Nsocks, "GROVE_NSOCKS", ParamKind::kString, ParamScope::kCommunicator, "", "", 0, 0, 1, "",  \
    false, "ignored (every lane has its own TCP connection); setting it logs a note")            \
  P(FaultDelayUs, "GROVE_FAULT_DELAY_US", ParamKind::kInteger, ParamScope::kCommunicator, "0",   \
    "microseconds", 0, 60000000, 1, "", false, "tests: sleep this long before each message sent")\
  P(FaultRank, "GROVE_FAULT_RANK", ParamKind::kInteger, ParamScope::kCommunicator, "-1", "rank", \
    -1, 1073741824, 1, "", false, "tests: the only rank GROVE_FAULT_DELAY_US applies to (-1 all)")\
  P(FaultCorruptFrame, "GROVE_FAULT_CORRUPT_FRAME", ParamKind::kInteger,                         \
    ParamScope::kCommunicator, "0", "frames", 0, 4611686018427387904, 1, "", false,              \
    "tests: flip a bit of the N-th data frame each TCP connection reads (0 = off)")              \
  P(JobId, "GROVE_JOB_ID", ParamKind::kString, ParamScope::kCommunicator, "", "", 0, 0, 1, "",   \
    false, "the launcher's job id, names the job's shared-memory segments (set by grove run)")   \
  /* ---- launch: read by the launch detection of fromEnv ---- */                                \
  P(Rank, "GROVE_RANK", ParamKind::kInteger, ParamScope::kLaunch, "", "rank", 0, 1073741824, 1,  \
    "", false, "this process's rank (set by grove run)")                                         \
  P(WorldSize, "GROVE_WORLD_SIZE", ParamKind::kInteger, ParamScope::kLaunch, "", "ranks", 1,     \
    1073741824, 1, "", false, "the job's number of ranks (set by grove run)")                    \
  P(LocalRank, "GROVE_LOCAL_RANK", ParamKind::kInteger, ParamScope::kLaunch, "", "rank", 0,      \
    1073741824, 1, "", false, "this process's rank on its host (set by grove run)")              \
  P(LocalSize, "GROVE_LOCAL_SIZE", ParamKind::kInteger, ParamScope::kLaunch, "", "ranks", 1,     \
    1073741824, 1, "", false, "ranks on this host")                                              \
  P(Root, "GROVE_ROOT", ParamKind::kString, ParamScope::kLaunch, "", "", 0, 0, 1, "", false,     \
    "the rendezvous store's host:port")                                                          \
  P(Store, "GROVE_STORE", ParamKind::kString, ParamScope::kLaunch, "", "", 0, 0, 1, "", false,   \
    "external: rank 0 serves no store; file:DIR: meet through files in DIR")                     \
  P(Secret, "GROVE_SECRET", ParamKind::kString, ParamScope::kLaunch, "", "", 0, 0, 1, "", true,  \
    "the job secret authenticating every store and transport connection")                        \
  P(SecretFile, "GROVE_SECRET_FILE", ParamKind::kString, ParamScope::kLaunch, "", "", 0, 0, 1,   \
    "", false, "a file holding the job secret, read when GROVE_SECRET is unset")                 \
  /* ---- per process: read once, by the log ---- */                                             \
  P(Debug, "GROVE_DEBUG", ParamKind::kEnum, ParamScope::kProcess, "WARN", "", 0, 0, 1,           \
    "NONE|VERSION|WARN|INFO|TRACE", false, "log level")                                          \
  P(DebugFile, "GROVE_DEBUG_FILE", ParamKind::kString, ParamScope::kProcess, "", "", 0, 0, 1, "",\
    false, "write log lines to this file instead of stderr (%h host, %p pid)")
// clang-format on
