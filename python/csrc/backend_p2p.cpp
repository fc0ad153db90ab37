// GroveBackend: send/recv and the barriers.
//
// Tags: grove matches the messages between two ranks in the order they were posted, so a
// tag is accepted and not used to match; ranks must post a pair's sends and receives in the
// same order (as every torch program that does not reorder tags does).
#include <sstream>
#include <thread>

#include "backend.hpp"
#include "tensors.hpp"

namespace grove_torch {
namespace {

constexpr grove::DataType kBytes = grove::DataType::kUint8;

void checkPeer(int peer, int size, int rank, const char* call, const char* what) {
  TORCH_CHECK(peer >= 0 && peer < size && peer != rank, "grove ", call, " on rank ", rank, ": ",
              what, " ", peer, " (expected another rank in [0, ", size, "))");
}

}  // namespace

c10::intrusive_ptr<c10d::Work> GroveBackend::send(std::vector<at::Tensor>& tensors, int dst,
                                                  int /*tag*/) {
  at::Tensor tensor = single(tensors, "send", "tensor", rank_);
  checkPeer(dst, size_, rank_, "send", "dst");
  at::Tensor data = tensor.is_contiguous() ? tensor : tensor.contiguous();
  return post(
      c10d::OpType::SEND, "grove:send", tensors, timeout_,
      [data, dst](grove::Communicator& comm, const grove::CallOptions&) {
        comm.send(data.data_ptr(), bytesOf(data), kBytes, dst);
      },
      {}, true);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::recv(std::vector<at::Tensor>& tensors, int src,
                                                  int /*tag*/) {
  at::Tensor tensor = single(tensors, "recv", "tensor", rank_);
  checkPeer(src, size_, rank_, "recv", "src");
  Buffer buffer(tensor);
  return post(
      c10d::OpType::RECV, "grove:recv", tensors, timeout_,
      [buffer, src](grove::Communicator& comm, const grove::CallOptions&) {
        comm.recv(buffer.ptr(), bytesOf(buffer.data), kBytes, src);
      },
      [buffer] { buffer.copyBack(); }, true);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::recvAnysource(std::vector<at::Tensor>& /*tensors*/,
                                                           int /*tag*/) {
  TORCH_CHECK(false, "grove recv on rank ", rank_,
              ": receiving from any source is not supported (grove matches point-to-point "
              "messages by peer); pass src=");
}

c10::intrusive_ptr<c10d::Work> GroveBackend::barrier(const c10d::BarrierOptions& opts) {
  // A one-byte all-reduce: it honours the call's timeout, and like every call it runs after
  // the calls queued before it, so the barrier's Work also means "my earlier calls are done".
  at::Tensor token = at::zeros({1}, at::kByte);
  return post(
      c10d::OpType::BARRIER, "grove:barrier", {}, timeoutOf(opts.timeout),
      [token](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.allReduce(token.data_ptr(), token.data_ptr(), 1, kBytes, grove::ReduceOp::kMax, o);
      },
      {}, false, !opts.asyncOp);
}

// Every rank but 0 reports at the store and waits for rank 0's verdict; rank 0 waits until
// all reported or the timeout passed, then names every rank that did not arrive (gloo names
// the first one only) and tells the others.
void GroveBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool /*waitAllRanks*/) {
  const std::chrono::milliseconds timeout = timeoutOf(opts.timeout);
  const std::string prefix = "grove_monitored_barrier/" + std::to_string(++monitoredBarriers_);
  const std::string verdictKey = prefix + "/verdict";
  auto raise = [&](const std::string& message) { std::rethrow_exception(backendError(message)); };
  if (rank_ != 0) {
    store_->set(prefix + "/arrived/" + std::to_string(rank_), std::vector<uint8_t>{1});
    try {
      store_->wait({verdictKey}, timeout + std::chrono::seconds(5));
    } catch (const std::exception&) {
      raise("grove monitored_barrier on rank " + std::to_string(rank_) + ": rank 0 gave no " +
            "verdict within " + std::to_string(timeout.count()) + " ms (rank 0 did not arrive)");
    }
    std::vector<uint8_t> verdict = store_->get(verdictKey);
    store_->add(prefix + "/read", 1);  // rank 0 (the store's host, often) may now go
    if (!verdict.empty()) raise(std::string(verdict.begin(), verdict.end()));
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<int> missing;
  for (;;) {
    missing.clear();
    for (int q = 1; q < size_; ++q) {
      if (!store_->check({prefix + "/arrived/" + std::to_string(q)})) missing.push_back(q);
    }
    if (missing.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string verdict;
  if (!missing.empty()) {
    std::ostringstream text;
    text << "grove monitored_barrier: rank" << (missing.size() > 1 ? "s " : " ");
    for (size_t i = 0; i < missing.size(); ++i) text << (i > 0 ? ", " : "") << missing[i];
    text << " of " << size_ << " did not arrive within " << timeout.count() << " ms";
    verdict = text.str();
  }
  store_->set(verdictKey, std::vector<uint8_t>(verdict.begin(), verdict.end()));
  // Rank 0 often hosts torch's store: before it raises (and perhaps exits), let the ranks
  // that arrived read the verdict (a few seconds at most).
  const int64_t arrived = size_ - 1 - static_cast<int64_t>(missing.size());
  const auto readBy = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (store_->add(prefix + "/read", 0) < arrived && std::chrono::steady_clock::now() < readBy) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!verdict.empty()) raise(verdict + " (seen by rank 0)");
}

}  // namespace grove_torch
