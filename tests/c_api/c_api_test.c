/* End-to-end test of the C ABI from a C11 program linked against the grove shared library.
 *
 * Why in C: the point of grove.h is that C code (and loaders such as ctypes or a framework's
 * plugin shim) can use grove with no C++ in sight, so this program proves the header
 * compiles as C11 and the library works through it. It covers NCCL's two classic patterns:
 * every rank of a groveCommInitAll driven from ONE thread through groups, and one thread per
 * rank joined by groveCommInitRank with a shared unique id. Every check is exact. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grove/grove.h"

#define MAX_RANKS 8

/* Failed checks, counted from every thread. */
static _Atomic int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Requires a call to return `expected`; prints the last error when it does not. */
#define EXPECT_RESULT(call, expected)                                                        \
  do {                                                                                       \
    groveResult_t result_ = (call);                                                          \
    if (result_ != (expected)) {                                                             \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d; last error: %s\n", __FILE__, \
              __LINE__, #call, (int)result_, groveGetErrorString(result_), (int)(expected),  \
              groveGetLastError(NULL));                                                      \
      ++failures;                                                                            \
    }                                                                                        \
  } while (0)

#define OK(call) EXPECT_RESULT(call, groveSuccess)

/* Fatal form for set-up steps that the rest of a test cannot do without. */
#define REQUIRE_OK(call)                                                       \
  do {                                                                         \
    groveResult_t result_ = (call);                                            \
    if (result_ != groveSuccess) {                                             \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call, \
              groveGetErrorString(result_), groveGetLastError(NULL));          \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static void testVersionAndStrings(void) {
  int version = -1;
  OK(groveGetVersion(&version));
  CHECK(version == GROVE_VERSION_CODE);
  CHECK(version == GROVE_VERSION_MAJOR * 10000 + GROVE_VERSION_MINOR * 100 + GROVE_VERSION_PATCH);
  EXPECT_RESULT(groveGetVersion(NULL), groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "version") != NULL);
  CHECK(strcmp(groveGetErrorString(groveSuccess), "no error") == 0);
  CHECK(strcmp(groveGetErrorString(groveInvalidArgument), "invalid argument") == 0);
  CHECK(strcmp(groveGetErrorString((groveResult_t)1234), "unknown result code") == 0);
  CHECK(groveChar == groveInt8 && groveInt == groveInt32 && groveHalf == groveFloat16);
  CHECK(groveFloat == groveFloat32 && groveDouble == groveFloat64 && groveBfloat16 == 9);
  CHECK(groveAvg == 4 && groveBxor == 7 && groveNumOps == 8 && groveTimeout == 8);

  groveUniqueId a, b;
  OK(groveGetUniqueId(&a));
  OK(groveGetUniqueId(&b));
  CHECK(memcmp(&a, &b, sizeof a) != 0);
  CHECK(sizeof(groveUniqueId) == 128);
}

/* AllReduce sum of int32 for counts 0, 1 and 7 (not a multiple of any rank count), out of
 * place and in place, then max. */
static void testAllReduce(groveComm_t* comms, int n) {
  static const size_t counts[] = {0, 1, 7};
  int32_t send[MAX_RANKS][7], recv[MAX_RANKS][7];
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
    size_t count = counts[c];
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < 7; ++i) {
        send[r][i] = r * 100 + (int32_t)i;
        recv[r][i] = -1;
      }
    }
    OK(groveGroupStart());
    for (int r = 0; r < n; ++r)
      OK(groveAllReduce(send[r], recv[r], count, groveInt32, groveSum, comms[r]));
    OK(groveGroupEnd());
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < 7; ++i) {
        int32_t expected = i < count ? 100 * n * (n - 1) / 2 + n * (int32_t)i : -1;
        CHECK(recv[r][i] == expected);
      }
    }
    /* In place. */
    OK(groveGroupStart());
    for (int r = 0; r < n; ++r)
      OK(groveAllReduce(send[r], send[r], count, groveInt, groveSum, comms[r]));
    OK(groveGroupEnd());
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < 7; ++i) {
        int32_t expected =
            i < count ? 100 * n * (n - 1) / 2 + n * (int32_t)i : r * 100 + (int32_t)i;
        CHECK(send[r][i] == expected);
      }
    }
  }
  double dsend[MAX_RANKS][3], drecv[MAX_RANKS][3];
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < 3; ++i) dsend[r][i] = (r == 1 ? 50.5 : r) - i;
  }
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r)
    OK(groveAllReduce(dsend[r], drecv[r], 3, groveDouble, groveMax, comms[r]));
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < 3; ++i) CHECK(drecv[r][i] == (n > 1 ? 50.5 : 0.0) - i);
  }
  /* Bitwise exclusive or of uint32 bit patterns; bitwise ops refuse floating types. */
  uint32_t xsend[MAX_RANKS], xrecv[MAX_RANKS], want = 0;
  for (int r = 0; r < n; ++r) want ^= xsend[r] = 0x9e3779b9u * (uint32_t)(r + 1);
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r)
    OK(groveAllReduce(&xsend[r], &xrecv[r], 1, groveUint32, groveBxor, comms[r]));
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) CHECK(xrecv[r] == want);
  CHECK(groveAllReduce(dsend[0], drecv[0], 3, groveDouble, groveBand, comms[0]) ==
        groveInvalidArgument);
}

static void testRootedCollectives(groveComm_t* comms, int n) {
  enum { kCount = 5 };
  int32_t send[MAX_RANKS][MAX_RANKS * kCount], recv[MAX_RANKS][MAX_RANKS * kCount];
  const int root = n - 1;

  /* Broadcast from the last rank; the other ranks pass no send buffer. */
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kCount; ++i) {
      send[r][i] = r * 1000 + i;
      recv[r][i] = -1;
    }
  }
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) {
    OK(groveBroadcast(r == root ? send[r] : NULL, recv[r], kCount, groveInt32, root, comms[r]));
  }
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kCount; ++i) CHECK(recv[r][i] == root * 1000 + i);
  }

  /* Reduce (sum) to rank 1 (0 alone); the other ranks pass no receive buffer. */
  const int reduceRoot = 1 % n;
  for (int r = 0; r < n; ++r) recv[r][0] = -1;
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) {
    OK(groveReduce(send[r], r == reduceRoot ? recv[r] : NULL, kCount, groveInt32, groveSum,
                   reduceRoot, comms[r]));
  }
  OK(groveGroupEnd());
  for (int i = 0; i < kCount; ++i) {
    CHECK(recv[reduceRoot][i] == 1000 * n * (n - 1) / 2 + n * i);
  }

  /* Gather to rank 0: recv[q * kCount + i] = send_q[i]. */
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) {
    OK(groveGather(send[r], r == 0 ? recv[r] : NULL, kCount, groveInt32, 0, comms[r]));
  }
  OK(groveGroupEnd());
  for (int q = 0; q < n; ++q) {
    for (int i = 0; i < kCount; ++i) CHECK(recv[0][q * kCount + i] == q * 1000 + i);
  }

  /* Scatter from the last rank: rank q receives root's block q. */
  for (int j = 0; j < n * kCount; ++j) send[root][j] = 7000 + j;
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) {
    OK(groveScatter(r == root ? send[r] : NULL, recv[r], kCount, groveInt32, root, comms[r]));
  }
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kCount; ++i) CHECK(recv[r][i] == 7000 + r * kCount + i);
  }
}

static void testAllToAllFamily(groveComm_t* comms, int n) {
  enum { kCount = 3 };
  int64_t send[MAX_RANKS][MAX_RANKS * kCount], recv[MAX_RANKS][MAX_RANKS * kCount];

  /* AllGather: recv_r[q * kCount + i] = send_q[i]. */
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kCount; ++i) send[r][i] = r * 10 + i;
  }
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) OK(groveAllGather(send[r], recv[r], kCount, groveInt64, comms[r]));
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      for (int i = 0; i < kCount; ++i) CHECK(recv[r][q * kCount + i] == q * 10 + i);
    }
  }

  /* ReduceScatter (sum): recv_r[i] = sum over q of send_q[r * kCount + i]. */
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < n * kCount; ++j) send[r][j] = r * 1000 + j;
  }
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) {
    OK(groveReduceScatter(send[r], recv[r], kCount, groveInt64, groveSum, comms[r]));
  }
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kCount; ++i) {
      CHECK(recv[r][i] == 1000 * n * (n - 1) / 2 + (int64_t)n * (r * kCount + i));
    }
  }

  /* AlltoAll: block q of rank r's send buffer lands in block r of rank q's receive buffer. */
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      for (int i = 0; i < kCount; ++i) send[r][q * kCount + i] = r * 100 + q * 10 + i;
    }
  }
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) OK(groveAlltoAll(send[r], recv[r], kCount, groveInt64, comms[r]));
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      for (int i = 0; i < kCount; ++i) CHECK(recv[r][q * kCount + i] == q * 100 + r * 10 + i);
    }
  }
}

/* Every rank sends to its right neighbour and receives from its left, all in one group. */
static void testSendRecvRing(groveComm_t* comms, int n) {
  enum { kCount = 4 };
  float send[MAX_RANKS][kCount], recv[MAX_RANKS][kCount];
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kCount; ++i) {
      send[r][i] = (float)(r * 7 + i);
      recv[r][i] = -1.0f;
    }
  }
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) {
    OK(groveSend(send[r], kCount, groveFloat, (r + 1) % n, comms[r]));
    OK(groveRecv(recv[r], kCount, groveFloat, (r + n - 1) % n, comms[r]));
  }
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) {
    int left = (r + n - 1) % n;
    for (int i = 0; i < kCount; ++i) CHECK(recv[r][i] == (float)(left * 7 + i));
  }
}

/* Bad input returns groveInvalidArgument with a message naming the argument; inside a group
 * the error comes back from groveGroupEnd too. Nested groups run at the outermost end. */
static void testErrorsAndGroups(groveComm_t* comms, int n) {
  int32_t buf[4] = {1, 2, 3, 4};
  EXPECT_RESULT(groveAllReduce(NULL, buf, 4, groveInt32, groveSum, comms[0]), groveInvalidArgument);
  CHECK(strstr(groveGetLastError(comms[0]), "sendbuff") != NULL);
  EXPECT_RESULT(groveAllReduce(buf, buf, 4, (groveDataType_t)99, groveSum, comms[0]),
                groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "datatype") != NULL);
  EXPECT_RESULT(groveAllReduce(buf, buf, 4, groveInt32, (groveRedOp_t)17, comms[0]),
                groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "op") != NULL);
  EXPECT_RESULT(groveBroadcast(buf, buf, 4, groveInt32, n, comms[0]), groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "root") != NULL);
  EXPECT_RESULT(groveBroadcast(buf, buf, 4, groveInt32, -1, comms[0]), groveInvalidArgument);
  EXPECT_RESULT(groveSend(buf, 4, groveInt32, n, comms[0]), groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "peer") != NULL);
  EXPECT_RESULT(groveAllReduce(buf, buf, 4, groveInt32, groveSum, NULL), groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "comm") != NULL);
  EXPECT_RESULT(groveGroupEnd(), groveInvalidUsage);
  CHECK(strlen(groveGetLastError(NULL)) > 0);

  /* Every rank's call is rejected inside the group: nothing is queued, the end reports it. */
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r) {
    EXPECT_RESULT(groveAllReduce(buf, buf, 4, (groveDataType_t)99, groveSum, comms[r]),
                  groveInvalidArgument);
  }
  EXPECT_RESULT(groveGroupEnd(), groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "datatype") != NULL);

  /* Nested groups: the inner end runs nothing, the outer end runs everything. */
  int32_t send[MAX_RANKS], recv[MAX_RANKS];
  for (int r = 0; r < n; ++r) {
    send[r] = r + 1;
    recv[r] = 0;
  }
  OK(groveGroupStart());
  OK(groveGroupStart());
  for (int r = 0; r < n; ++r)
    OK(groveAllReduce(&send[r], &recv[r], 1, groveInt32, groveProd, comms[r]));
  OK(groveGroupEnd());
  for (int r = 0; r < n; ++r) CHECK(recv[r] == 0);
  OK(groveGroupEnd());
  int factorial = 1;
  for (int r = 1; r <= n; ++r) factorial *= r;
  for (int r = 0; r < n; ++r) CHECK(recv[r] == factorial);
}

static void testInitAll(int n) {
  groveComm_t comms[MAX_RANKS];
  REQUIRE_OK(groveCommInitAll(comms, n, NULL));
  for (int r = 0; r < n; ++r) {
    int count = -1, rank = -1;
    groveResult_t asyncError = groveInternalError;
    OK(groveCommCount(comms[r], &count));
    OK(groveCommUserRank(comms[r], &rank));
    OK(groveCommGetAsyncError(comms[r], &asyncError));
    CHECK(count == n);
    CHECK(rank == r);
    CHECK(asyncError == groveSuccess);
  }
  testAllReduce(comms, n);
  testRootedCollectives(comms, n);
  testAllToAllFamily(comms, n);
  testSendRecvRing(comms, n);
  testErrorsAndGroups(comms, n);
  for (int r = 0; r < n; ++r) OK(groveCommDestroy(comms[r]));
  if (n < 2) return;

  /* Abort: rank 0 leaves; the others' allreduce must fail with a remote error, not hang. */
  int devlist[MAX_RANKS];
  for (int r = 0; r < n; ++r) devlist[r] = 10 + r;
  REQUIRE_OK(groveCommInitAll(comms, n, devlist));
  OK(groveCommAbort(comms[0]));
  int32_t value[MAX_RANKS];
  OK(groveGroupStart());
  for (int r = 1; r < n; ++r) {
    value[r] = r;
    groveAllReduce(&value[r], &value[r], 1, groveInt32, groveSum, comms[r]);
  }
  EXPECT_RESULT(groveGroupEnd(), groveRemoteError);
  CHECK(strlen(groveGetLastError(NULL)) > 0);
  for (int r = 1; r < n; ++r) {
    groveResult_t asyncError = groveSuccess;
    OK(groveCommGetAsyncError(comms[r], &asyncError));
    CHECK(asyncError == groveRemoteError);
    OK(groveCommDestroy(comms[r]));
  }
}

/* One thread per rank, joined by groveCommInitRank with a shared unique id. */
enum { kThreadRanks = 3 };

struct RankArgs {
  groveUniqueId id;
  int rank;
  int failures;
};

static void* rankMain(void* raw) {
  struct RankArgs* args = (struct RankArgs*)raw;
  const int n = kThreadRanks, r = args->rank;
  groveComm_t comm = NULL;
  REQUIRE_OK(groveCommInitRank(&comm, n, args->id, r));
  int count = -1, rank = -1;
  OK(groveCommCount(comm, &count));
  OK(groveCommUserRank(comm, &rank));
  if (count != n || rank != r) args->failures++;

  /* Blocking allreduce, no group: sum of (r + 1) * 3 + i. */
  uint64_t send[5], recv[5];
  for (int i = 0; i < 5; ++i) send[i] = (uint64_t)((r + 1) * 3 + i);
  OK(groveAllReduce(send, recv, 5, groveUint64, groveSum, comm));
  for (int i = 0; i < 5; ++i) {
    if (recv[i] != (uint64_t)(3 * n * (n + 1) / 2 + n * i)) args->failures++;
  }

  /* Send/recv ring inside this thread's own group. */
  int32_t out = 100 + r, in = -1;
  OK(groveGroupStart());
  OK(groveSend(&out, 1, groveInt32, (r + 1) % n, comm));
  OK(groveRecv(&in, 1, groveInt32, (r + n - 1) % n, comm));
  OK(groveGroupEnd());
  if (in != 100 + (r + n - 1) % n) args->failures++;

  /* Split into even and odd ranks, ordered by descending old rank (key = -rank). */
  groveComm_t half = NULL;
  OK(groveCommSplit(comm, r % 2, -r, &half, NULL));
  if (half == NULL) {
    args->failures++;
  } else {
    int halfCount = -1, halfRank = -1;
    OK(groveCommCount(half, &halfCount));
    OK(groveCommUserRank(half, &halfRank));
    /* evens {0, 2}: rank 2 first; odds {1}. */
    int expectedCount = r % 2 == 0 ? 2 : 1;
    int expectedRank = r == 2 ? 0 : (r == 0 ? 1 : 0);
    if (halfCount != expectedCount || halfRank != expectedRank) args->failures++;
    int32_t mine = r + 1, sum = 0;
    OK(groveAllReduce(&mine, &sum, 1, groveInt32, groveSum, half));
    if (sum != (r % 2 == 0 ? 1 + 3 : 2)) args->failures++;
    OK(groveCommDestroy(half));
  }

  /* Rank 0 opts out of a second split and gets no communicator. */
  groveComm_t rest = (groveComm_t)&args; /* any non-NULL value, must be overwritten */
  OK(groveCommSplit(comm, r == 0 ? GROVE_SPLIT_NOCOLOR : 5, 0, &rest, NULL));
  if (r == 0) {
    if (rest != NULL) args->failures++;
  } else {
    int restCount = -1, restRank = -1;
    OK(groveCommCount(rest, &restCount));
    OK(groveCommUserRank(rest, &restRank));
    if (restCount != 2 || restRank != r - 1) args->failures++;
    OK(groveCommDestroy(rest));
  }
  OK(groveCommDestroy(NULL));

  /* Collective error on every rank: root out of range. */
  EXPECT_RESULT(groveReduce(send, recv, 5, groveUint64, groveSum, n + 3, comm),
                groveInvalidArgument);
  if (strstr(groveGetLastError(comm), "root") == NULL) args->failures++;

  OK(groveCommDestroy(comm));
  return NULL;
}

static void testInitRankThreads(void) {
  groveUniqueId id;
  REQUIRE_OK(groveGetUniqueId(&id));
  pthread_t threads[kThreadRanks];
  struct RankArgs args[kThreadRanks];
  for (int r = 0; r < kThreadRanks; ++r) {
    args[r].id = id;
    args[r].rank = r;
    args[r].failures = 0;
    CHECK(pthread_create(&threads[r], NULL, rankMain, &args[r]) == 0);
  }
  for (int r = 0; r < kThreadRanks; ++r) {
    CHECK(pthread_join(threads[r], NULL) == 0);
    if (args[r].failures != 0) {
      fprintf(stderr, "rank thread %d: %d wrong results\n", r, args[r].failures);
      failures += args[r].failures;
    }
  }
}

/* A destroyed handle, destroyed again or used again, and a pointer grove never returned are
 * groveInvalidArgument, not a use-after-free (tests/unit/c_api_handles_test.cpp has more). */
static void testStaleAndForeignHandles(void) {
  groveComm_t comm = NULL;
  REQUIRE_OK(groveCommInitAll(&comm, 1, NULL));
  REQUIRE_OK(groveCommDestroy(comm));
  CHECK(groveCommDestroy(comm) == groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "destroyed already") != NULL);
  int value = 0;
  CHECK(groveAllReduce(&value, &value, 1, groveInt32, groveSum, comm) == groveInvalidArgument);
  CHECK(groveCommCount(comm, &value) == groveInvalidArgument);
  struct {
    long words[4];
  } local = {{0, 0, 0, 0}};
  CHECK(groveCommUserRank((groveComm_t)&local, &value) == groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "not a communicator handle") != NULL);
  CHECK(groveCommDestroy((groveComm_t)&local) == groveInvalidArgument);
}

/* Knobs set from code: a small slot size (every message is many tiles) and GROVE_CHECK,
 * through an options handle that is freed before the communicators are used. */
static void testInitAllWithOptions(void) {
  enum { kRanks = 3, kCount = 5000 };
  groveOptions_t options = NULL;
  CHECK(groveOptionsCreate(&options) == groveSuccess);
  CHECK(groveOptionsSet(options, "GROVE_SLOT_BYTES", "4096") == groveSuccess);
  CHECK(groveOptionsSet(options, "GROVE_CHECK", "1") == groveSuccess);
  CHECK(groveOptionsSet(options, "GROVE_SLOT_BYTES", "4000") == groveInvalidArgument);
  CHECK(strstr(groveGetLastError(NULL), "GROVE_SLOT_BYTES") != NULL);
  groveComm_t comms[kRanks];
  CHECK(groveCommInitAllConfig(comms, kRanks, NULL, options) == groveSuccess);
  CHECK(groveOptionsDestroy(options) == groveSuccess);
  static int32_t data[kRanks][kCount];
  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < kCount; ++i) data[r][i] = r + i;
  }
  CHECK(groveGroupStart() == groveSuccess);
  for (int r = 0; r < kRanks; ++r) {
    CHECK(groveAllReduce(data[r], data[r], kCount, groveInt32, groveSum, comms[r]) == groveSuccess);
  }
  CHECK(groveGroupEnd() == groveSuccess);
  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < kCount; ++i) CHECK(data[r][i] == 3 + 3 * i);
    CHECK(groveCommDestroy(comms[r]) == groveSuccess);
  }
}

int main(void) {
  testVersionAndStrings();
  testInitAllWithOptions();
  testStaleAndForeignHandles();
  testInitAll(3);
  testInitAll(4);
  testInitAll(1);
  testInitRankThreads();
  if (failures != 0) {
    fprintf(stderr, "c_api_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
