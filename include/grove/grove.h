/* The C ABI of grove, shaped like NCCL's so that code written for NCCL reads the same.
 *
 * Why a C ABI: frameworks (PyTorch process groups, JAX, custom trainers) load collective
 * libraries through a stable C interface, and most of them already speak NCCL. Every name
 * here is NCCL's with `nccl` replaced by `grove`; the values of the enumerations are the
 * same as NCCL's and as the C++ API's (grove::ErrorCode, grove::DataType, grove::ReduceOp).
 * The one visible difference: NCCL's calls take a cudaStream_t and ours do not, because a
 * CPU collective has no stream; a call returns once its work is done (or, inside a group,
 * once it is queued).
 *
 * Error model: every function returns a groveResult_t and never lets a C++ exception
 * escape. When a call fails, a message naming the function, the argument, the rank and what
 * was expected is stored as the calling thread's last error (groveGetLastError).
 *
 * Threads: a communicator may be used by one thread at a time. A call made on it while
 * another thread is inside a call on it (a collective, send/recv, groveGroupEnd, split,
 * shrink, revoke or destroy) fails with groveInvalidUsage, naming both calls, and is not
 * run; the call in flight is unaffected. groveCommAbort is the exception: it ends the call
 * in flight (see there). groveCommCount, groveCommUserRank and
 * groveCommGetAsyncError may be called from any thread at any time. Groups
 * (groveGroupStart/groveGroupEnd) are per thread, as in NCCL: one thread can drive every
 * rank of a groveCommInitAll by issuing each rank's call inside one group.
 *
 * Handles: a comm that was destroyed (groveCommDestroy, groveCommAbort) or that grove never
 * returned gives groveInvalidArgument ("comm is not a live communicator ..." / "... not a
 * communicator handle") from every function; grove checks it against a registry of the
 * handles it issued without reading the memory it points to. Handles are never reused, so
 * a stale one can never reach a newer communicator. Destroying a comm while another thread
 * is about to call on it remains a race the check cannot always see: end the use first.
 *
 * This header is plain C11 and may be included from C++.
 */
#pragma once

#include <stddef.h>

/* Defines GROVE_VERSION_MAJOR, _MINOR, _PATCH, _CODE and _STRING (plain preprocessor). */
#include "grove/version.hpp"

#if defined(_WIN32)
#define GROVE_API
#else
/** Marks a function exported from the grove shared library. */
#define GROVE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Outcome of a call. The values are NCCL's (ncclResult_t) and grove::ErrorCode's. */
typedef enum {
  groveSuccess = 0,            /**< The call succeeded. */
  groveUnhandledCudaError = 1, /**< Reserved for a future CUDA backend. */
  groveSystemError = 2,        /**< A system call or the operating system failed. */
  groveInternalError = 3,      /**< A bug in grove: an invariant did not hold. */
  groveInvalidArgument = 4,    /**< An argument is wrong (NULL pointer, bad type, bad root). */
  groveInvalidUsage = 5,       /**< The call is wrong in context (aborted comm, mismatch). */
  groveRemoteError = 6,        /**< Another rank failed; this call cannot complete. */
  groveInProgress = 7,         /**< An asynchronous operation has not completed yet. */
  groveTimeout = 8,            /**< A wait passed its deadline (GROVE_TIMEOUT). */
  groveNumResults = 9,         /**< Number of result codes. */
  /** Makes the type as wide as int, so any int a caller passes is a value of the type (as
   *  NCCL's ncclMaxRedOp does): invalid values are then reported, not undefined. */
  groveResultForceInt = 0x7fffffff,
  groveResultForceIntMin = -0x7fffffff - 1
} groveResult_t;

/** Element type of a buffer. Numbered as grove::DataType; aliases as in NCCL. */
typedef enum {
  groveInt8 = 0,
  groveChar = 0,
  groveUint8 = 1,
  groveInt32 = 2,
  groveInt = 2,
  groveUint32 = 3,
  groveInt64 = 4,
  groveUint64 = 5,
  groveFloat16 = 6, /**< IEEE 754 binary16, reduced through float32. */
  groveHalf = 6,
  groveFloat32 = 7,
  groveFloat = 7,
  groveFloat64 = 8,
  groveDouble = 8,
  groveBfloat16 = 9,                         /**< bfloat16, reduced through float32. */
  groveNumTypes = 10,                        /**< Number of element types. */
  groveDataTypeForceInt = 0x7fffffff,        /**< See groveResultForceInt. */
  groveDataTypeForceIntMin = -0x7fffffff - 1 /**< See groveResultForceInt. */
} groveDataType_t;

/** Reduction operator. Numbered as grove::ReduceOp. */
typedef enum {
  groveSum = 0,
  groveProd = 1,
  groveMax = 2,    /**< Propagates NaN. */
  groveMin = 3,    /**< Propagates NaN. */
  groveAvg = 4,    /**< Sum divided by the number of ranks (integers truncate toward zero). */
  groveBand = 5,   /**< Bitwise and (integer types only). */
  groveBor = 6,    /**< Bitwise or (integer types only). */
  groveBxor = 7,   /**< Bitwise exclusive or (integer types only). */
  groveNumOps = 8, /**< Number of operators. */
  groveRedOpForceInt = 0x7fffffff,        /**< See groveResultForceInt. */
  groveRedOpForceIntMin = -0x7fffffff - 1 /**< See groveResultForceInt. */
} groveRedOp_t;

/** Opaque handle on one rank of a communicator. */
typedef struct groveComm* groveComm_t;

/** Size in bytes of a groveUniqueId. */
#define GROVE_UNIQUE_ID_BYTES 128

/** Names a group of ranks being created; made by groveGetUniqueId on one rank and handed to
 *  every rank of the group (by whatever means the application has). */
typedef struct {
  char internal[GROVE_UNIQUE_ID_BYTES];
} groveUniqueId;

/** Opaque handle on a set of knobs (the GROVE_* settings) for the communicators made with
 *  it, like NCCL's ncclConfig_t: see groveOptionsCreate. */
typedef struct groveOptions* groveOptions_t;

/** The `color` that makes groveCommSplit return no communicator for the calling rank. */
#define GROVE_SPLIT_NOCOLOR (-1)

/** Stores GROVE_VERSION_CODE (major * 10000 + minor * 100 + patch) of the library in
 *  *version. groveInvalidArgument when version is NULL. */
GROVE_API groveResult_t groveGetVersion(int* version);

/** Makes a new unique id, as ncclGetUniqueId does: starts a rendezvous store in this process
 *  (listening on every interface, on an ephemeral port; it lives until the process exits)
 *  and writes into the id the address other processes reach it at (the interface chosen as
 *  GROVE_SOCKET_IFNAME says) and a fresh random job secret. Call it on one rank and hand the
 *  id to the others (MPI_Bcast, a file, ...). */
GROVE_API groveResult_t groveGetUniqueId(groveUniqueId* uniqueId);

/** Creates rank `rank` of a communicator of `nranks` ranks named by `commId`. Collective:
 *  blocks until all nranks ranks (threads or processes, on this host or others) have called
 *  it with the same id, or until GROVE_TIMEOUT seconds (default 300) have passed
 *  (groveTimeout, naming the missing ranks). groveInvalidArgument when comm is NULL, nranks
 *  < 1, rank is outside [0, nranks) or commId is not an id made by groveGetUniqueId. */
GROVE_API groveResult_t groveCommInitRank(groveComm_t* comm, int nranks, groveUniqueId commId,
                                          int rank);

/** Makes an empty set of knobs in *options (nothing set: the environment and the defaults
 *  apply). Free it with groveOptionsDestroy; communicators made with it keep their own copy.
 *  groveInvalidArgument when options is NULL. */
GROVE_API groveResult_t groveOptionsCreate(groveOptions_t* options);

/** Sets knob `key` (an environment variable's name, "GROVE_TIMEOUT") to `value` as the
 *  environment would spell it ("30"); it then wins over the environment for communicators
 *  made with these options. An empty value removes it again. The value is checked as the
 *  environment's is: groveInvalidArgument naming the knob (groveGetLastError) for an
 *  unknown key, a malformed value, a knob read from the environment only (GROVE_DEBUG,
 *  GROVE_DEBUG_FILE), or a NULL argument. */
GROVE_API groveResult_t groveOptionsSet(groveOptions_t options, const char* key, const char* value);

/** Frees `options` (NULL is ignored). */
GROVE_API groveResult_t groveOptionsDestroy(groveOptions_t options);

/** groveCommInitRank with knobs set from code (like ncclCommInitRankConfig); `options` may be
 *  NULL (then it is groveCommInitRank). */
GROVE_API groveResult_t groveCommInitRankConfig(groveComm_t* comm, int nranks, groveUniqueId commId,
                                                int rank, groveOptions_t options);

/** Creates this process's rank from the launcher's environment (grove run, torchrun, Open
 *  MPI, MPICH, Slurm; see docs/launchers.md), like grove::Communicator::fromEnv(). */
GROVE_API groveResult_t groveCommInitEnv(groveComm_t* comm);

/** groveCommInitEnv with knobs set from code, the launch variables (GROVE_ROOT, GROVE_SECRET,
 *  ...) included; `options` may be NULL. */
GROVE_API groveResult_t groveCommInitEnvConfig(groveComm_t* comm, groveOptions_t options);

/** Creates all `ndev` ranks of a communicator inside this process: comms[i] is rank i.
 *  `devlist` may be NULL; when given it holds ndev distinct non-negative labels (there are
 *  no devices to select on CPU, the labels are only checked). The ranks may then be driven
 *  by one thread through groups, or each by its own thread. */
GROVE_API groveResult_t groveCommInitAll(groveComm_t* comms, int ndev, const int* devlist);

/** groveCommInitAll with knobs set from code; `options` may be NULL. */
GROVE_API groveResult_t groveCommInitAllConfig(groveComm_t* comms, int ndev, const int* devlist,
                                               groveOptions_t options);

/** Collective over `comm`: splits it into one new communicator per distinct `color`, ranks
 *  ordered by (`key`, rank in comm). A rank passing GROVE_SPLIT_NOCOLOR gets *newcomm =
 *  NULL. `config` is reserved and must be NULL. Not allowed inside a group (the ranks of a
 *  split must therefore be driven by distinct threads). */
GROVE_API groveResult_t groveCommSplit(groveComm_t comm, int color, int key, groveComm_t* newcomm,
                                       void* config);

/** Marks the communicator failed (peers waiting on this rank get groveRemoteError instead
 *  of waiting forever) and frees the handle. A NULL comm is a no-op, as in NCCL. As with
 *  ncclCommAbort, it may be called while another thread is inside a call on comm (a
 *  collective stuck on a peer): that call then returns groveInvalidUsage ("the communicator
 *  was aborted") within microseconds of polling or one wake-up, and groveCommAbort returns
 *  once it has left; otherwise it never blocks. */
GROVE_API groveResult_t groveCommAbort(groveComm_t comm);

/** groveCommRevoke's flags: none are defined; pass GROVE_REVOKE_DEFAULT. */
#define GROVE_REVOKE_DEFAULT 0x00
/** groveCommShrink's flags (NCCL's values). DEFAULT: comm has no call in flight (or it
 *  failed); ABORT: revoke comm's calls in flight first (as groveCommRevoke). */
#define GROVE_SHRINK_DEFAULT 0x00
#define GROVE_SHRINK_ABORT 0x01

/** Quiesces comm (ncclCommRevoke): its calls in flight and every later call fail with
 *  groveInvalidUsage ("... the communicator was revoked"), peers waiting on this rank get
 *  groveRemoteError, and comm can still be shrunk (groveCommShrink); free it with
 *  groveCommDestroy. Never blocks. revokeFlags must be GROVE_REVOKE_DEFAULT. */
GROVE_API groveResult_t groveCommRevoke(groveComm_t comm, int revokeFlags);

/** Collective among the survivors (ncclCommShrink): every rank of comm not in
 *  excludeRanksList[0 .. excludeRanksCount) calls it with the same ranks; *newcomm becomes a
 *  new communicator of those ranks, renumbered in their order in comm. Works after an
 *  excluded rank died and after comm failed or was revoked; comm itself stays as it is (free
 *  it with groveCommDestroy). Survivors that disagree on the list fail (groveTimeout or
 *  groveInvalidUsage) at the latest at GROVE_TIMEOUT. groveInvalidArgument for a rank out of
 *  range, listed twice or the caller itself, a NULL list with a positive count, config not
 *  NULL (grove has no config type: reserved) or unknown shrinkFlags; groveInvalidUsage inside
 *  a group. See docs/failures.md, "Recovery". */
GROVE_API groveResult_t groveCommShrink(groveComm_t comm, int* excludeRanksList,
                                        int excludeRanksCount, groveComm_t* newcomm, void* config,
                                        int shrinkFlags);

/** Frees the handle of a communicator that has no operation in flight. A NULL comm is a
 *  no-op, as in NCCL. groveInvalidUsage when comm has calls queued in this thread's open
 *  group or another thread is inside a call on it; groveInvalidArgument when it was
 *  destroyed already. */
GROVE_API groveResult_t groveCommDestroy(groveComm_t comm);

/** Stores the number of ranks of comm in *count. */
GROVE_API groveResult_t groveCommCount(const groveComm_t comm, int* count);

/** Stores the rank of the caller in comm in *rank. */
GROVE_API groveResult_t groveCommUserRank(const groveComm_t comm, int* rank);

/** Stores in *asyncError the first error an operation of comm hit, or groveSuccess. */
GROVE_API groveResult_t groveCommGetAsyncError(groveComm_t comm, groveResult_t* asyncError);

/** recvbuff[i] = op over all ranks of sendbuff[i], i < count, on every rank. In place when
 *  sendbuff == recvbuff. */
GROVE_API groveResult_t groveAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       groveDataType_t datatype, groveRedOp_t op, groveComm_t comm);

/** recvbuff on every rank = sendbuff of `root` (count elements); sendbuff is read on the
 *  root only and may be NULL elsewhere. */
GROVE_API groveResult_t groveBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                       groveDataType_t datatype, int root, groveComm_t comm);

/** recvbuff on `root` = op over all ranks of sendbuff (count elements); recvbuff is written
 *  on the root only and may be NULL elsewhere. */
GROVE_API groveResult_t groveReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    groveDataType_t datatype, groveRedOp_t op, int root,
                                    groveComm_t comm);

/** recvbuff[q * sendcount + i] = sendbuff[i] of rank q; recvbuff holds nranks * sendcount
 *  elements. In place when sendbuff == recvbuff + rank * sendcount. */
GROVE_API groveResult_t groveAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       groveDataType_t datatype, groveComm_t comm);

/** recvbuff[i] = op over all ranks q of sendbuff_q[rank * recvcount + i]; sendbuff holds
 *  nranks * recvcount elements. In place when sendbuff + rank * recvcount == recvbuff. */
GROVE_API groveResult_t groveReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           groveDataType_t datatype, groveRedOp_t op,
                                           groveComm_t comm);

/** recvbuff[q * count + i] = sendbuff_q[rank * count + i]: block q of the send buffer goes
 *  to rank q. Both buffers hold nranks * count elements. */
GROVE_API groveResult_t groveAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                      groveDataType_t datatype, groveComm_t comm);

/** recvbuff on `root` [q * count + i] = sendbuff_q[i]; recvbuff (nranks * count elements)
 *  may be NULL on the other ranks. */
GROVE_API groveResult_t groveGather(const void* sendbuff, void* recvbuff, size_t count,
                                    groveDataType_t datatype, int root, groveComm_t comm);

/** recvbuff on rank q = sendbuff of `root` [q * count + i], count elements; sendbuff
 *  (nranks * count elements) is read on the root only and may be NULL elsewhere. */
GROVE_API groveResult_t groveScatter(const void* sendbuff, void* recvbuff, size_t count,
                                     groveDataType_t datatype, int root, groveComm_t comm);

/** Sends count elements to rank `peer`, which must post a matching groveRecv. Put matching
 *  sends and receives of an exchange inside one group so they cannot deadlock. */
GROVE_API groveResult_t groveSend(const void* sendbuff, size_t count, groveDataType_t datatype,
                                  int peer, groveComm_t comm);

/** Receives count elements from rank `peer`, which must post a matching groveSend. */
GROVE_API groveResult_t groveRecv(void* recvbuff, size_t count, groveDataType_t datatype, int peer,
                                  groveComm_t comm);

/** Opens a group on the calling thread (groups nest). Until the outermost groveGroupEnd,
 *  every call on a communicator is queued and returns at once; its buffers must stay valid
 *  until groveGroupEnd returns. An argument error is still returned by the call itself. */
GROVE_API groveResult_t groveGroupStart(void);

/** Closes a group. The outermost groveGroupEnd runs every queued call of every communicator
 *  touched by the group, driving them all from this thread until all complete, and returns
 *  the first error of the group (also an error a queued call returned). groveInvalidUsage
 *  when no group is open. */
GROVE_API groveResult_t groveGroupEnd(void);

/** Allocates `size` bytes of zero-filled, page-aligned memory that the other ranks of a
 *  communicator on this host can read in place (ncclMemAlloc's role; grove::allocate in
 *  C++): large single-host allreduce, reducescatter, allgather and broadcast over such
 *  buffers read each peer's data once, without a copy through a FIFO. Ordinary buffers
 *  still work everywhere. groveInvalidArgument when ptr is NULL or size is 0;
 *  groveSystemError when the system refuses the memory. */
GROVE_API groveResult_t groveMemAlloc(void** ptr, size_t size);

/** Frees memory from groveMemAlloc; NULL is ignored. groveInvalidArgument for a pointer that
 *  groveMemAlloc did not return (or that was freed already). */
GROVE_API groveResult_t groveMemFree(void* ptr);

/** A short description of `result`, e.g. "invalid argument". Never NULL. */
GROVE_API const char* groveGetErrorString(groveResult_t result);

/** The message of the last failed grove call on the calling thread ("" if none). `comm` may
 *  be NULL; the message is per thread, not per communicator. The text stays valid until the
 *  next failing grove call on this thread. */
GROVE_API const char* groveGetLastError(groveComm_t comm);

#ifdef __cplusplus
} /* extern "C" */
#endif
