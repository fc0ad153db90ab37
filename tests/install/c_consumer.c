/* Smallest C program against an installed grove, built with `pkg-config --cflags --libs grove`.
 *
 * Why it exists: it proves that grove.h is valid C, that grove.pc gives the right flags and
 * that the C ABI links from a C compiler without any C++ flags. One thread drives both ranks
 * of a groveCommInitAll through a group, as NCCL code does. Exit code 0 when the sum is exact,
 * 1 otherwise. */
#include <grove/grove.h>
#include <stdio.h>

#define CHECK(call)                                                                            \
  do {                                                                                         \
    groveResult_t result_ = (call);                                                            \
    if (result_ != groveSuccess) {                                                             \
      fprintf(stderr, "c_consumer: %s failed: %s (%s)\n", #call, groveGetErrorString(result_), \
              groveGetLastError(NULL));                                                        \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

enum { kRanks = 2, kCount = 1000 };

int main(int argc, char** argv) {
  (void)argc;
  int version = 0;
  CHECK(groveGetVersion(&version));
  if (version != GROVE_VERSION_CODE) {
    fprintf(stderr, "c_consumer: library version %d, header version %d\n", version,
            GROVE_VERSION_CODE);
    return 1;
  }

  groveComm_t comms[kRanks];
  CHECK(groveCommInitAll(comms, kRanks, NULL));

  static double input[kRanks][kCount];
  static double output[kRanks][kCount];
  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < kCount; ++i) {
      input[r][i] = (double)(i * (r + 1));
      output[r][i] = -1.0;
    }
  }

  CHECK(groveGroupStart());
  for (int r = 0; r < kRanks; ++r) {
    CHECK(groveAllReduce(input[r], output[r], kCount, groveFloat64, groveSum, comms[r]));
  }
  CHECK(groveGroupEnd());

  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < kCount; ++i) {
      double expected = (double)(i * 3); /* i * 1 + i * 2 */
      if (output[r][i] != expected) {
        fprintf(stderr, "c_consumer: rank %d element %d is %g, expected %g\n", r, i, output[r][i],
                expected);
        return 1;
      }
    }
  }
  for (int r = 0; r < kRanks; ++r) CHECK(groveCommDestroy(comms[r]));

  printf("%s: grove %s allReduce over %d ranks OK\n", argv[0], GROVE_VERSION_STRING, kRanks);
  return 0;
}
