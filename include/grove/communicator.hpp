// The C++ face of grove: a Communicator is one rank's handle on a group of ranks.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grove/error.hpp"
#include "grove/options.hpp"
#include "grove/store.hpp"
#include "grove/types.hpp"

namespace grove {

namespace detail {
class CommState;
class Operation;
}  // namespace detail

/// Per-call choices that override the defaults. An empty field means "let grove choose".
struct CallOptions {
  /// Algorithm name, e.g. "ring", "tree", "chain", "recursive_doubling" (see
  /// docs/algorithms.md). Overrides GROVE_ALGO for this call. Every rank must pass the same.
  std::string algorithm;
  /// How long this call may wait for its peers before it fails with ErrorCode::kTimeout
  /// (naming the call, the step and the peer it waited for). Zero: GROVE_TIMEOUT.
  std::chrono::milliseconds timeout{0};
};

/// How Communicator::fromStore joins its group.
struct StoreJoinOptions {
  /// Names the group, equal on every rank (a framework's group name). The communicators
  /// this process creates through one store under one name as one rank are numbered, and
  /// each number has its own keys: a group destroyed and created again (destroy and
  /// init_process_group) never meets the keys of the last one, as long as every rank
  /// creates and destroys in the same order.
  std::string group = "default";
  /// The job secret that authenticates the TCP transport's connections, the same on every
  /// rank. Empty: GROVE_SECRET, else the contents of GROVE_SECRET_FILE, else none.
  std::string secret;
  /// How long creation waits for the other ranks. Zero: GROVE_TIMEOUT.
  std::chrono::milliseconds timeout{0};
};

/// Handle on an asynchronous collective. Progress is made by the thread that calls test()
/// or wait() (or by any later blocking call on the same communicator). The threads grove
/// starts never run a call: the TCP transport's network thread moves bytes between sockets
/// and FIFOs, a process's heartbeat thread beats its shared-memory liveness counter, and
/// rank 0's store server answers the store. So an operation that nobody waits on does not
/// advance. test() and
/// wait() use the communicator: they are refused with ErrorCode::kInvalidUsage while
/// another thread is inside a call on it (see Communicator). Once the communicator is
/// destroyed they report the operation's outcome without touching it.
class Request {
 public:
  Request() = default;
  ~Request();
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  /// Advances the operation without blocking; true once it has completed. Throws the
  /// operation's error if it failed.
  bool test();

  /// Blocks until the operation completes; throws its error if it failed.
  void wait();

  /// Blocks until the operation completes or `deadline` passes. Returns false on timeout
  /// (the operation stays in flight); throws the operation's error if it failed.
  bool wait(std::chrono::steady_clock::time_point deadline);

  /// True when this handle refers to an operation (default-constructed ones do not).
  bool valid() const noexcept { return static_cast<bool>(op_); }

 private:
  friend class Communicator;
  Request(std::shared_ptr<detail::Operation> op, std::weak_ptr<detail::CommState> comm);
  /// Enters the communicator (the one-thread check) and runs `drive` on it unless the
  /// operation finished or the communicator is gone; then reports the outcome.
  template <class Drive>
  bool advance(const char* call, Drive&& drive);
  std::shared_ptr<detail::Operation> op_;
  /// Weak: a Request must not keep its communicator alive, and must not touch it once it is
  /// destroyed (its destructor fails what was still queued).
  std::weak_ptr<detail::CommState> comm_;
};

/// One rank of a group. Every rank of the group must issue the same collectives in the same
/// order with matching arguments (count, type, op, root), as with NCCL and MPI.
///
/// Buffers are raw pointers with element counts (`size_t`). In-place forms follow NCCL:
/// `sendbuf == recvbuf` for allReduce, broadcast, reduce and allToAll; allGather in place
/// when `sendbuf == recvbuf + rank * count`; reduceScatter in place when
/// `sendbuf + rank * count == recvbuf`; gather on the root when `sendbuf == recvbuf + root *
/// count`; scatter on the root when `recvbuf == sendbuf + root * count`. Any other overlap
/// of the send and receive buffers is rejected with ErrorCode::kInvalidArgument.
///
/// A Communicator may be used by one thread at a time; distinct communicators (also one
/// split from another) may be used concurrently from different threads. "Used" means any
/// member below that issues, drives or ends work — the collectives and their Async forms,
/// send/recv, groups, split, shrink, abort, revoke — and test() or wait() on a Request of
/// this communicator. A thread that enters while another thread is inside one of those
/// gets ErrorCode::kInvalidUsage naming both calls and both threads (e.g. "grove allReduce
/// (rank 0 of 2, thread 41): thread 40 is inside Request::wait #7 ..."), and its call is not
/// run: the call in flight completes normally. The check is a compare-and-swap per call,
/// no lock and no system call. rank(), size(), getAsyncError() and valid() may be called
/// from any thread at any time. Destroying or moving a Communicator while another thread
/// uses it is not detected; handing it (or a Request) to another thread between calls is
/// fine.
class Communicator {
 public:
  /// Creates `nranks` communicators whose ranks are threads of this process (the in-process
  /// transport). Element i is rank i; each must then be driven by its own thread. `options`
  /// (grove/options.hpp) set knobs for these communicators over the environment.
  static std::vector<Communicator> createInProcess(int nranks, const Options& options = {});

  /// Creates this process's rank of a multi-process job from the launcher's environment:
  /// `grove run`, torchrun, Open MPI, MPICH/Hydra or Slurm (see docs/bootstrap.md); blocks
  /// until every rank has joined (GROVE_TIMEOUT). Ranks on one host talk through shared
  /// memory, hosts through TCP. Rank 0 serves the rendezvous store unless
  /// GROVE_STORE=external (then `grove store` must run at GROVE_ROOT); with
  /// GROVE_STORE=file:DIR the ranks meet through files in DIR (a shared file system, a fresh
  /// directory per job) and need no GROVE_ROOT. Call it once per job;
  /// make further communicators with split(). `options` set knobs over the environment,
  /// the launch variables grove reads (GROVE_ROOT, GROVE_STORE, GROVE_SECRET, ...) included.
  static Communicator fromEnv(const Options& options = {});

  /// Creates rank `rank` of a group of `size` processes that meet through `store`, a store
  /// the caller brings (a framework's own, see grove/store.hpp); blocks until every rank
  /// has joined. Ranks on one host talk through shared memory, hosts through TCP, as with
  /// fromEnv. Throws kInvalidArgument for a null store or a rank outside [0, size), and
  /// what fromEnv throws for a failed rendezvous. `settings` set knobs over the environment
  /// (StoreJoinOptions' secret and timeout, when given, win over GROVE_SECRET/GROVE_TIMEOUT).
  static Communicator fromStore(std::shared_ptr<Store> store, int rank, int size,
                                const StoreJoinOptions& options = {}, const Options& settings = {});

  Communicator();
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This rank's index, 0 <= rank() < size().
  int rank() const;
  /// Number of ranks in the group.
  int size() const;

  /// recvbuf[i] = op over all ranks of sendbuf[i], for i < count, on every rank.
  void allReduce(const void* sendbuf, void* recvbuf, size_t count, DataType type, ReduceOp op,
                 const CallOptions& options = {});
  /// recvbuf on every rank = sendbuf of `root` (count elements). sendbuf is read on the root
  /// only.
  void broadcast(const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
                 const CallOptions& options = {});
  /// recvbuf on `root` = op over all ranks of sendbuf. recvbuf is written on the root only
  /// and may be null elsewhere.
  void reduce(const void* sendbuf, void* recvbuf, size_t count, DataType type, ReduceOp op,
              int root, const CallOptions& options = {});
  /// recvbuf[q * count + i] = sendbuf[i] of rank q; recvbuf holds size() * count elements.
  void allGather(const void* sendbuf, void* recvbuf, size_t count, DataType type,
                 const CallOptions& options = {});
  /// recvbuf[i] = op over all ranks q of sendbuf_q[rank() * count + i]; sendbuf holds
  /// size() * count elements, recvbuf holds count.
  void reduceScatter(const void* sendbuf, void* recvbuf, size_t count, DataType type, ReduceOp op,
                     const CallOptions& options = {});
  /// recvbuf[q * count + i] = sendbuf_q[rank() * count + i]: block q of the send buffer goes
  /// to rank q. Both buffers hold size() * count elements.
  void allToAll(const void* sendbuf, void* recvbuf, size_t count, DataType type,
                const CallOptions& options = {});
  /// Like allToAll with per-peer element counts and displacements (in elements):
  /// sendCounts[q] elements from sendbuf + sendDispls[q] go to rank q, which receives them
  /// at its recvbuf + recvDispls[rank()] with recvCounts[rank()] == that count.
  void allToAllv(const void* sendbuf, std::span<const size_t> sendCounts,
                 std::span<const size_t> sendDispls, void* recvbuf,
                 std::span<const size_t> recvCounts, std::span<const size_t> recvDispls,
                 DataType type, const CallOptions& options = {});
  /// recvbuf on `root` [q * count + i] = sendbuf_q[i]; recvbuf may be null elsewhere.
  void gather(const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
              const CallOptions& options = {});
  /// recvbuf[i] on rank q = sendbuf of `root` [q * count + i]; sendbuf is read on the root.
  void scatter(const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
               const CallOptions& options = {});
  /// Sends count elements to `peer`, which must post a matching recv.
  void send(const void* sendbuf, size_t count, DataType type, int peer);
  /// Receives count elements from `peer`, which must post a matching send.
  void recv(void* recvbuf, size_t count, DataType type, int peer);
  /// Returns once every rank has entered the barrier.
  void barrier();

  /// Asynchronous forms: the same semantics, returning at once with a Request. Buffers must
  /// stay valid and untouched until the Request completes. Operations on one communicator
  /// complete in the order they were issued.
  Request allReduceAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type,
                         ReduceOp op, const CallOptions& options = {});
  Request broadcastAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
                         const CallOptions& options = {});
  Request reduceAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type, ReduceOp op,
                      int root, const CallOptions& options = {});
  Request allGatherAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type,
                         const CallOptions& options = {});
  Request reduceScatterAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type,
                             ReduceOp op, const CallOptions& options = {});
  Request allToAllAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type,
                        const CallOptions& options = {});
  Request allToAllvAsync(const void* sendbuf, std::span<const size_t> sendCounts,
                         std::span<const size_t> sendDispls, void* recvbuf,
                         std::span<const size_t> recvCounts, std::span<const size_t> recvDispls,
                         DataType type, const CallOptions& options = {});
  Request gatherAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
                      const CallOptions& options = {});
  Request scatterAsync(const void* sendbuf, void* recvbuf, size_t count, DataType type, int root,
                       const CallOptions& options = {});
  Request sendAsync(const void* sendbuf, size_t count, DataType type, int peer);
  Request recvAsync(void* recvbuf, size_t count, DataType type, int peer);
  Request barrierAsync();

  /// Starts a group: every call that follows (blocking forms too) is queued and returns at
  /// once; groupEnd() then runs the queue: send/recv calls concurrently, which is what makes
  /// exchanges like "send to the right, receive from the left" possible without deadlock,
  /// and collectives in issue order. Buffers must stay valid until groupEnd() returns.
  void groupStart();
  /// Ends a group and runs it to completion.
  void groupEnd();
  /// Ends a group and returns at once; the Request completes when every queued operation
  /// has. Lets one thread drive several communicators' groups at the same time (as
  /// groveGroupEnd does for communicators made by groveCommInitAll).
  Request groupEndAsync();

  /// Collective: splits the group into one new communicator per distinct `color`; ranks
  /// are ordered by (`key`, old rank) inside each. A negative color returns an empty
  /// Communicator (valid() is false) for this rank.
  Communicator split(int color, int key);

  /// Marks this communicator failed: the operations in flight and every later call throw
  /// ErrorCode::kInvalidUsage on this rank, and peers waiting on this rank get
  /// ErrorCode::kRemoteError instead of waiting forever. Unlike every other call it may be
  /// made while another thread is inside one (a collective stuck on a peer, as a watchdog
  /// or a framework's abort does with NCCL): that thread's call then fails ("the
  /// communicator was aborted") where it waits — within 64 polls, or at once from its sleep
  /// — and abort() returns once it has left. A call blocked in connecting to a peer (its
  /// first message over TCP) notices only when that wait ends. Otherwise it never blocks.
  void abort();

  /// Quiesces this communicator: the operations in flight and every later call throw
  /// ErrorCode::kInvalidUsage ("... the communicator was revoked") on this rank, and peers
  /// waiting on this rank get ErrorCode::kRemoteError (as with abort()). Unlike after
  /// abort-and-destroy, the communicator can then still be shrunk. Never blocks.
  void revoke();

  /// Collective among the survivors: every rank not listed in `excludedRanks` calls it with
  /// the same list (in any order). Returns a new communicator of those ranks, renumbered in
  /// the order of their ranks here, made over fresh connections among them only, so it works
  /// after a listed rank died and after this communicator failed, was revoked or aborted
  /// (none of that carries over). Survivors that disagree on the list fail with an error
  /// (kTimeout or kInvalidUsage) at the latest at GROVE_TIMEOUT, never hang. Throws
  /// kInvalidArgument for a rank out of range, listed twice, or this rank itself, and
  /// kInvalidUsage inside a group. See docs/failures.md ("Recovery").
  Communicator shrink(std::span<const int> excludedRanks);

  /// The first error an operation of this communicator hit, or kSuccess. Any thread.
  ErrorCode getAsyncError() const;

  /// True when this handle refers to a communicator.
  bool valid() const noexcept { return static_cast<bool>(state_); }

  /// Implementation access for grove's own tools and the C ABI.
  detail::CommState& state() const;
  /// Implementation access: wraps a state made by grove's own bootstrap code.
  static Communicator fromState(std::shared_ptr<detail::CommState> state) {
    return Communicator(std::move(state));
  }

 private:
  explicit Communicator(std::shared_ptr<detail::CommState> state);
  std::shared_ptr<detail::CommState> state_;
};

}  // namespace grove
