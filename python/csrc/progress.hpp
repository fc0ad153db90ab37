// The backend's engine: one thread per communicator that runs the queued calls in order on
// grove and completes each call's Work and its future, so that a caller that only holds
// the future (DDP's gradient hooks) sees it complete without ever calling wait().
//
// grove allows one thread at a time per communicator: whoever holds the engine's token
// (busy_) uses it. That is this thread, except for a blocking call (async_op=False) made
// while nothing is outstanding: the caller then runs it itself, which saves the two thread
// hand-offs (queue to this thread, completion back) that dominate small calls. This thread
// spins briefly for the next call, then sleeps on a condition variable (an idle group costs
// no CPU); a caller blocked in Work::wait spins as briefly, then sleeps.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <grove/communicator.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace grove_torch {

/// One call's handle for torch: completes when the progress thread finished the call.
class GroveWork : public c10d::Work {
 public:
  GroveWork(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
            std::chrono::milliseconds timeout);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  /// Blocks until the call completed (rethrowing its error). `timeout` bounds the wait
  /// (kNoTimeout: the call's own deadline, the group's timeout, bounds it).
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::chrono::milliseconds getTimeout() const override { return timeout_; }

  /// By the progress thread: the call succeeded / failed.
  void complete();
  void fail(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> done_{false};
};

/// A queued call. `run` executes it on grove (blocking, on the progress thread) with the
/// call's timeout. Point-to-point calls set `p2p`: consecutive ones run in one grove group,
/// so that a send and a receive queued together (batch_isend_irecv, or isend then irecv)
/// progress at the same time instead of the send waiting for a receive queued behind it.
struct Task {
  c10::intrusive_ptr<GroveWork> work;
  std::function<void(grove::Communicator&, const grove::CallOptions&)> run;
  /// Runs after `run` succeeded (copies out of staging buffers), on the progress thread.
  std::function<void()> finish;
  std::chrono::milliseconds timeout{0};
  bool p2p = false;
};

class ProgressEngine {
 public:
  ProgressEngine(grove::Communicator comm, int rank);
  /// Runs what was queued, then stops (shutdown()).
  ~ProgressEngine();

  /// Queues `task`; throws (as DistBackendError) after shutdown or abort.
  void enqueue(Task task);
  /// Runs `task` on the calling thread when no call is outstanding (queued or running) and
  /// returns true; else false, and the caller enqueues it.
  bool runInline(Task& task);
  /// Fails every queued call and aborts the communicator, which also ends the call in
  /// flight (it fails at once, not at its deadline), so that peers waiting on this rank get
  /// an error.
  void abort();
  /// Waits until every queued call ran, then stops the thread and destroys the
  /// communicator. Idempotent.
  void shutdown();

 private:
  void loop();
  void runBatch(std::vector<Task>& batch);
  void acquire();
  void release() { busy_.store(false, std::memory_order_release); }
  std::vector<Task> nextBatch();

  grove::Communicator comm_;
  int rank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  std::atomic<size_t> queued_{0};
  /// Calls enqueued and not yet completed.
  std::atomic<size_t> outstanding_{0};
  /// The communicator's token: held by whoever runs calls on it.
  std::atomic<bool> busy_{false};
  bool sleeping_ = false;
  bool stopping_ = false;
  bool aborting_ = false;
  std::string abortReason_;
  std::thread thread_;
};

/// A c10::DistBackendError carrying `message`, as torch raises it in Python
/// (torch.distributed.DistBackendError).
std::exception_ptr backendError(const std::string& message);

}  // namespace grove_torch
