// The progress thread and the Work it completes (see progress.hpp).
#include "progress.hpp"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <sched.h>

namespace grove_torch {
namespace {

using Clock = std::chrono::steady_clock;
/// How long a thread polls before it sleeps: long enough to catch the next call of a
/// training loop's burst, short enough that an idle group costs nothing.
constexpr auto kSpin = std::chrono::microseconds(50);

// Polls `ready` for kSpin, yielding the core between polls (more threads than cores).
template <class Ready>
bool spinFor(Ready&& ready) {
  const Clock::time_point until = Clock::now() + kSpin;
  do {
    if (ready()) return true;
    sched_yield();
  } while (Clock::now() < until);
  return ready();
}

}  // namespace

std::exception_ptr backendError(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

GroveWork::GroveWork(int rank, c10d::OpType type, const char* title,
                     std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout)
    : c10d::Work(rank, type, title),
      outputs_(std::move(outputs)),
      timeout_(timeout),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

bool GroveWork::isCompleted() { return done_.load(std::memory_order_acquire); }

bool GroveWork::isSuccess() const {
  std::lock_guard lock(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr GroveWork::exception() const {
  std::lock_guard lock(mutex_);
  return exception_;
}

std::vector<at::Tensor> GroveWork::result() { return outputs_; }

bool GroveWork::wait(std::chrono::milliseconds timeout) {
  if (!spinFor([this] { return done_.load(std::memory_order_acquire); })) {
    std::unique_lock lock(mutex_);
    if (timeout <= std::chrono::milliseconds(0)) {
      cv_.wait(lock, [this] { return completed_; });
    } else if (!cv_.wait_for(lock, timeout, [this] { return completed_; })) {
      std::rethrow_exception(backendError(
          "grove: Work::wait timed out after " + std::to_string(timeout.count()) +
          " ms; the call is still in flight (it fails on its own at the group's timeout)"));
    }
  }
  std::exception_ptr error = exception();
  if (error) std::rethrow_exception(error);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> GroveWork::getFuture() { return future_; }

void GroveWork::complete() {
  {
    std::lock_guard lock(mutex_);
    completed_ = true;
  }
  done_.store(true, std::memory_order_release);
  cv_.notify_all();
  future_->markCompleted(c10::IValue(outputs_));
}

void GroveWork::fail(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    completed_ = true;
    exception_ = error;
  }
  done_.store(true, std::memory_order_release);
  cv_.notify_all();
  future_->setError(error);
}

ProgressEngine::ProgressEngine(grove::Communicator comm, int rank)
    : comm_(std::move(comm)), rank_(rank), thread_([this] { loop(); }) {}

ProgressEngine::~ProgressEngine() { shutdown(); }

void ProgressEngine::enqueue(Task task) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || aborting_) {
      std::rethrow_exception(
          backendError(aborting_ ? "grove: the process group was aborted (" + abortReason_ + ")"
                                 : std::string("grove: the process group was shut down")));
    }
    outstanding_.fetch_add(1, std::memory_order_acq_rel);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1, std::memory_order_release);
    wake = sleeping_;
  }
  if (wake) wake_.notify_one();
}

bool ProgressEngine::runInline(Task& task) {
  bool expected = false;
  if (!busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
  // Holding the token, with nothing outstanding: no earlier call can run after this one.
  bool idle = outstanding_.load(std::memory_order_acquire) == 0;
  if (idle) {
    std::lock_guard lock(mutex_);
    idle = !stopping_ && !aborting_;
  }
  if (!idle) {
    release();
    return false;
  }
  std::vector<Task> batch;
  batch.push_back(std::move(task));
  runBatch(batch);
  release();
  return true;
}

void ProgressEngine::acquire() {
  bool expected = false;
  while (!busy_.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
    expected = false;
    sched_yield();
  }
}

void ProgressEngine::abort() {
  std::deque<Task> dropped;
  {
    std::lock_guard lock(mutex_);
    if (aborting_ || stopping_) return;
    aborting_ = true;
    abortReason_ = "abort() on rank " + std::to_string(rank_);
    dropped.swap(queue_);
    queued_.store(0, std::memory_order_release);
  }
  wake_.notify_one();
  for (Task& task : dropped) {
    task.work->fail(backendError("grove: the call was dropped: the process group was aborted"));
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
  }
  // The call in flight too (a collective stuck on a hung peer): grove's abort may come from
  // this thread while the progress thread (or an inline caller) is inside that call, which
  // then fails with "the communicator was aborted"; abort() returns once it has left. The
  // communicator lives until shutdown() joins the thread, which this thread is not in.
  try {
    if (comm_.valid()) comm_.abort();
  } catch (const std::exception&) {
    // Already aborted, or a third thread inside: the loop's own abort covers it.
  }
}

void ProgressEngine::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  comm_ = grove::Communicator();
}

std::vector<Task> ProgressEngine::nextBatch() {
  std::vector<Task> batch;
  spinFor([this] { return queued_.load(std::memory_order_acquire) > 0; });
  std::unique_lock lock(mutex_);
  sleeping_ = true;
  wake_.wait(lock, [this] { return !queue_.empty() || stopping_ || aborting_; });
  sleeping_ = false;
  if (aborting_ || queue_.empty()) return batch;
  // Point-to-point calls queued back to back run together in one grove group.
  do {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_release);
  } while (batch.front().p2p && !queue_.empty() && queue_.front().p2p);
  return batch;
}

void ProgressEngine::runBatch(std::vector<Task>& batch) {
  grove::CallOptions options;
  options.timeout = batch.front().timeout;
  try {
    if (batch.size() == 1 && !batch.front().p2p) {
      if (batch.front().run) batch.front().run(comm_, options);
    } else {
      comm_.groupStart();
      for (Task& task : batch) {
        if (task.run) task.run(comm_, options);
      }
      comm_.groupEnd();
    }
    for (Task& task : batch) {
      if (task.finish) task.finish();
      task.work->complete();
    }
  } catch (const std::exception& error) {
    std::exception_ptr failure = backendError(error.what());
    for (Task& task : batch) task.work->fail(failure);
  }
}

void ProgressEngine::loop() {
  for (;;) {
    std::vector<Task> batch = nextBatch();
    if (batch.empty()) {
      std::lock_guard lock(mutex_);
      if (aborting_ || queue_.empty()) break;
      continue;
    }
    acquire();
    runBatch(batch);
    release();
    outstanding_.fetch_sub(batch.size(), std::memory_order_acq_rel);
  }
  bool abortComm = false;
  {
    std::lock_guard lock(mutex_);
    abortComm = aborting_;
  }
  acquire();  // a caller running a call inline finishes it first
  if (abortComm && comm_.valid()) {
    try {
      comm_.abort();
    } catch (const std::exception&) {
    }
  }
}

}  // namespace grove_torch
