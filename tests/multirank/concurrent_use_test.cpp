// Misuse by threads: a second thread entering a communicator while a call is in flight on it
// (a blocking call, or a Request being waited) fails with kInvalidUsage naming both calls, and
// the call in flight completes with the right result — except abort(), which ends that call. Ranks
// are threads of one process; rank 0's communicator is additionally entered by an intruding thread.
//
// Why: before the check, two threads in one communicator interleaved their messages and
// returned success with unreduced buffers. The deterministic tests hold rank 1 back until the
// intruder has been refused, so the first call is surely in flight; the hammering test lets
// two threads race on one communicator and checks that every call either succeeded with the
// exact sum or was refused, never succeeded with a wrong buffer.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

using ::testing::HasSubstr;

/// Generous, so that a bug shows as an error rather than a hang; never reached when correct.
CallOptions patient() {
  CallOptions options;
  options.timeout = std::chrono::seconds(120);
  return options;
}

/// Retries `attempt` (which must be a call whose arguments grove rejects before it changes
/// anything, so an admitted attempt is harmless) until the communicator refuses it as in use
/// by another thread; returns that message.
template <class Attempt>
std::string refusalOf(Attempt&& attempt) {
  for (;;) {
    try {
      attempt();
      ADD_FAILURE() << "the attempt succeeded; it must fail one way or the other";
      return {};
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kInvalidUsage) return e.what();
      if (e.code() != ErrorCode::kInvalidArgument) {
        ADD_FAILURE() << "unexpected error: " << e.what();
        return {};
      }
    }
    std::this_thread::yield();
  }
}

/// Runs `call`, again while it is refused: the intruding thread's probes are inside the
/// communicator for a moment too, and a call refused for that is not run at all.
template <class Call>
void retryWhileRefused(Call&& call) {
  for (;;) {
    try {
      call();
      return;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kInvalidUsage) throw;
      std::this_thread::yield();
    }
  }
}

/// A broadcast with a root out of range: rejected (kInvalidArgument) before anything is
/// queued when admitted, refused (kInvalidUsage) while another thread is inside.
void badBroadcast(Communicator& comm) {
  float x = 0;
  comm.broadcast(&x, &x, 1, DataType::kFloat32, 99);
}

void expectSums(const std::vector<float>& out, float sum) {
  for (float v : out) ASSERT_EQ(v, sum);
}

TEST(CommConcurrent, SecondThreadDuringBlockingCallIsRefused) {
  auto comms = Communicator::createInProcess(2);
  std::vector<float> in0(8, 1), out0(8, 0), in1(8, 2), out1(8, 0);
  std::thread rank0([&] {
    expectNoThrow([&] {
      retryWhileRefused([&] {
        comms[0].allReduce(in0.data(), out0.data(), 8, DataType::kFloat32, ReduceOp::kSum,
                           patient());
      });
    });
  });
  std::string message = refusalOf([&] { badBroadcast(comms[0]); });
  EXPECT_THAT(message, HasSubstr("grove broadcast (rank 0 of 2, thread "));
  EXPECT_THAT(message, HasSubstr("is inside allReduce #"));
  EXPECT_THAT(message, HasSubstr("one thread at a time"));
  // Rank 1 joins only now: the refused call must have left rank 0's call intact.
  comms[1].allReduce(in1.data(), out1.data(), 8, DataType::kFloat32, ReduceOp::kSum, patient());
  rank0.join();
  expectSums(out0, 3);
  expectSums(out1, 3);
  // And the communicator stays usable from one thread at a time.
  runOnComms(comms, [](Communicator& comm) {
    std::vector<float> in(4, 1), out(4, 0);
    comm.allReduce(in.data(), out.data(), 4, DataType::kFloat32, ReduceOp::kSum);
    expectSums(out, 2);
  });
}

TEST(CommConcurrent, SecondThreadDuringRequestWaitIsRefused) {
  auto comms = Communicator::createInProcess(2);
  std::vector<float> in0(8, 1), out0(8, 0), in1(8, 2), out1(8, 0);
  std::thread rank0([&] {
    expectNoThrow([&] {
      Request request;
      retryWhileRefused([&] {
        request = comms[0].allReduceAsync(in0.data(), out0.data(), 8, DataType::kFloat32,
                                          ReduceOp::kSum, patient());
      });
      retryWhileRefused([&] { request.wait(); });
    });
  });
  std::string message = refusalOf([&] { badBroadcast(comms[0]); });
  EXPECT_THAT(message, HasSubstr("grove broadcast (rank 0 of 2"));
  // Caught in the wait (or, rarely, while allReduceAsync issues): both are #1.
  EXPECT_THAT(message, ::testing::AnyOf(HasSubstr("is inside Request::wait #"),
                                        HasSubstr("is inside allReduceAsync #")));
  comms[1].allReduce(in1.data(), out1.data(), 8, DataType::kFloat32, ReduceOp::kSum, patient());
  rank0.join();
  expectSums(out0, 3);
  expectSums(out1, 3);
}

TEST(CommConcurrent, RequestTestedDuringAnotherThreadsCallIsRefused) {
  auto comms = Communicator::createInProcess(2);
  std::vector<float> in0(8, 1), out0(8, 0), in1(8, 2), out1(8, 0);
  std::vector<float> in2(8, 1), out2(8, 0), in3(8, 2), out3(8, 0);
  // Rank 0 issues the first allreduce asynchronously, then blocks in a second one; rank 1
  // joins neither until the Request's test() from another thread has been refused.
  std::atomic<Request*> first{nullptr};
  Request request;
  std::thread rank0([&] {
    expectNoThrow([&] {
      request = comms[0].allReduceAsync(in0.data(), out0.data(), 8, DataType::kFloat32,
                                        ReduceOp::kSum, patient());
      first.store(&request);
      retryWhileRefused([&] {
        comms[0].allReduce(in2.data(), out2.data(), 8, DataType::kFloat32, ReduceOp::kSum,
                           patient());
      });
    });
  });
  while (first.load() == nullptr) std::this_thread::yield();
  std::string message;
  for (;;) {
    try {
      // Admitted before rank 0's second call, test() only polls (nothing can complete yet).
      ASSERT_FALSE(first.load()->test());
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kInvalidUsage) << e.what();
      message = e.what();
      break;
    }
    std::this_thread::yield();
  }
  EXPECT_THAT(message, HasSubstr("grove Request::test (rank 0 of 2"));
  EXPECT_THAT(message, HasSubstr("is inside allReduce #"));
  comms[1].allReduce(in1.data(), out1.data(), 8, DataType::kFloat32, ReduceOp::kSum, patient());
  comms[1].allReduce(in3.data(), out3.data(), 8, DataType::kFloat32, ReduceOp::kSum, patient());
  rank0.join();
  EXPECT_TRUE(request.test());  // the owner thread is done: any one thread may now
  expectSums(out0, 3);
  expectSums(out1, 3);
  expectSums(out2, 3);
  expectSums(out3, 3);
}

/// Runs `call` again while it is refused for the probing thread (as retryWhileRefused);
/// returns the code of the error that ended it (its text in `message`), or kSuccess.
template <class Call>
ErrorCode errorOf(Call&& call, std::string& message) {
  for (;;) {
    try {
      call();
      message.clear();
      return ErrorCode::kSuccess;
    } catch (const Error& e) {
      message = e.what();
      if (e.code() != ErrorCode::kInvalidUsage ||
          message.find("one thread at a time") == std::string::npos) {
        return e.code();
      }
      std::this_thread::yield();
    }
  }
}

// abort() from another thread ends the call in flight, where a second thread's other calls
// are refused: the call fails at once (not at its 120 s deadline) with the abort's reason,
// abort() returns once that call has left, and a peer waiting for the aborted rank gets
// kRemoteError instead of waiting out its own deadline.
TEST(CommConcurrent, AbortFromAnotherThreadEndsTheBlockingCall) {
  auto comms = Communicator::createInProcess(2);
  // Rank 0 waits to receive from rank 1, which never sends: only the abort can end it.
  std::vector<float> got(8, -1), in1(8, 2);
  std::string message;
  ErrorCode code = ErrorCode::kInternalError;
  std::thread rank0([&] {
    code = errorOf([&] { comms[0].recv(got.data(), 8, DataType::kFloat32, 1); }, message);
  });
  refusalOf([&] { badBroadcast(comms[0]); });  // rank 0's call is inside now
  comms[0].abort();
  rank0.join();  // abort() returned after the call left: this does not wait
  EXPECT_EQ(code, ErrorCode::kInvalidUsage) << message;
  EXPECT_THAT(message, HasSubstr("send/recv #1"));
  EXPECT_THAT(message, HasSubstr("on rank 0 of 2: the communicator was aborted"));
  for (float v : got) EXPECT_EQ(v, -1);
  // Rank 0 sent nothing before it was aborted: rank 1 waiting for it hears of the abort.
  try {
    comms[1].recv(in1.data(), 8, DataType::kFloat32, 0);
    ADD_FAILURE() << "rank 1's recv from the aborted rank 0 succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRemoteError) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("on rank 1 of 2: rank 0 failed: the communicator was aborted"))
        << e.what();
  }
  // The aborted communicator refuses later calls; aborting it again is harmless.
  EXPECT_THROW(comms[0].barrier(), Error);
  comms[0].abort();
}

TEST(CommConcurrent, AbortFromAnotherThreadEndsARequestWait) {
  auto comms = Communicator::createInProcess(2);
  std::vector<float> in0(8, 1), out0(8, 0);
  std::string message;
  ErrorCode code = ErrorCode::kInternalError;
  std::thread rank0([&] {
    Request request;
    code = errorOf(
        [&] {
          request = comms[0].allReduceAsync(in0.data(), out0.data(), 8, DataType::kFloat32,
                                            ReduceOp::kSum, patient());
        },
        message);
    if (code != ErrorCode::kSuccess) return;
    code = errorOf([&] { request.wait(); }, message);
  });
  refusalOf([&] { badBroadcast(comms[0]); });
  comms[0].abort();
  rank0.join();
  EXPECT_EQ(code, ErrorCode::kInvalidUsage) << message;
  EXPECT_THAT(message, HasSubstr("the communicator was aborted"));
}

// Two threads call allreduce on rank 0's communicator as fast as they can while rank 1 runs
// allreduces on its own thread. Element 0 is a stop flag (0 on every call but the last one,
// which rank 0 sends after both threads are done); the others sum to 1 + 2 = 3 whichever of
// rank 0's calls meets whichever of rank 1's.
TEST(CommConcurrent, HammeringOneCommunicatorNeverGivesAWrongBuffer) {
  constexpr int kCallsPerThread = 400;
  constexpr size_t kCount = 64;
  auto comms = Communicator::createInProcess(2);
  std::atomic<int> succeeded{0};
  std::atomic<int> refused{0};
  std::thread rank1([&] {
    expectNoThrow([&] {
      std::vector<float> in(kCount, 2), out(kCount, 0);
      in[0] = 0;
      for (;;) {
        comms[1].allReduce(in.data(), out.data(), kCount, DataType::kFloat32, ReduceOp::kSum,
                           patient());
        for (size_t i = 1; i < kCount; ++i) ASSERT_EQ(out[i], 3) << "element " << i;
        if (out[0] == 1) return;
        ASSERT_EQ(out[0], 0);
      }
    });
  });
  auto hammer = [&] {
    std::vector<float> in(kCount, 1), out(kCount);
    in[0] = 0;
    for (int call = 0; call < kCallsPerThread; ++call) {
      std::fill(out.begin(), out.end(), -1.0f);
      try {
        comms[0].allReduce(in.data(), out.data(), kCount, DataType::kFloat32, ReduceOp::kSum,
                           patient());
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), ErrorCode::kInvalidUsage) << e.what();
        ASSERT_THAT(e.what(), HasSubstr("grove allReduce (rank 0 of 2, thread ")) << e.what();
        ASSERT_THAT(e.what(), HasSubstr(" is inside allReduce")) << e.what();
        for (float v : out) ASSERT_EQ(v, -1.0f) << "a refused call wrote its buffer";
        refused.fetch_add(1);
        continue;
      }
      ASSERT_EQ(out[0], 0);
      for (size_t i = 1; i < kCount; ++i) ASSERT_EQ(out[i], 3) << "element " << i;
      succeeded.fetch_add(1);
    }
  };
  std::thread a(hammer);
  std::thread b(hammer);
  a.join();
  b.join();
  std::vector<float> stop(kCount, 1), out(kCount, 0);
  comms[0].allReduce(stop.data(), out.data(), kCount, DataType::kFloat32, ReduceOp::kSum,
                     patient());
  rank1.join();
  EXPECT_EQ(succeeded.load() + refused.load(), 2 * kCallsPerThread);
  RecordProperty("refused", refused.load());
  RecordProperty("succeeded", succeeded.load());
}

}  // namespace
}  // namespace grove::mr
