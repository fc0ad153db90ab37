// grove as a torch.distributed backend: a c10d::Backend whose every call is queued on the
// group's progress thread (progress.hpp) and runs there on a grove Communicator that met
// through torch's own store (torch_store.hpp).
//
// Each method checks its arguments on the calling thread (a clear error naming the call,
// the rank and what was expected; nothing is queued), then queues the call and returns its
// Work. Non-contiguous tensors are staged: copied into a contiguous buffer, and results
// copied back when the call completes. Collectives that do not reduce move tensors as bytes,
// so they take every dtype.
#pragma once

#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "grove/options.hpp"
#include "progress.hpp"

namespace grove_torch {

class GroveBackend : public c10d::Backend {
 public:
  /// Joins the group `groupName` of `size` ranks as `rank` through `store` (blocks until
  /// every rank joined, at most `timeout`), its communicator made with `settings` (grove's
  /// knobs set from code, winning over the environment).
  GroveBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
               std::chrono::milliseconds timeout, const std::string& groupName,
               const grove::Options& settings = {});
  ~GroveBackend() override;

  const std::string getBackendName() const override { return "grove"; }
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  void abort() override;
  void shutdown() override;
  /// split_group: a fresh grove communicator of the members of `ranks` (this group's ranks,
  /// in their new order) through the child's store, as new_group makes one; nullptr on a
  /// rank not in `ranks`. Needs nothing from the other splits' members.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  /// What split_group hands a child by default: this group's timeout and name.
  c10::intrusive_ptr<Options> getBackendOptions() override;
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;

 private:
  using Run = std::function<void(grove::Communicator&, const grove::CallOptions&)>;
  /// Queues a call (or runs it at once when `blocking`, torch's async_op=False, and nothing
  /// is outstanding); returns its Work.
  c10::intrusive_ptr<c10d::Work> post(c10d::OpType type, const char* title,
                                      std::vector<at::Tensor> outputs,
                                      std::chrono::milliseconds timeout, Run run,
                                      std::function<void()> finish = {}, bool p2p = false,
                                      bool blocking = false);
  /// A coalesced call: `call(i)` queues the i-th of `pairs` calls. Calls on one group
  /// complete in order, so the last one's Work completes after all of them (an empty one
  /// after what was queued before).
  template <class Call>
  c10::intrusive_ptr<c10d::Work> eachPair(size_t pairs, Call&& call) {
    c10::intrusive_ptr<c10d::Work> last;
    for (size_t i = 0; i < pairs; ++i) last = call(i);
    return last ? last : post(c10d::OpType::COALESCED, "grove:coalesced", {}, timeout_, {});
  }
  /// The call's timeout: its own if set, else the group's.
  std::chrono::milliseconds timeoutOf(std::chrono::milliseconds requested) const;
  /// A reduce-scatter of `input` (size() blocks) into `output`, staged as needed.
  c10::intrusive_ptr<c10d::Work> reduceScatterFlat(const at::Tensor& output,
                                                   const at::Tensor& input,
                                                   const c10d::ReduceScatterOptions& opts,
                                                   const char* call);

  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  std::string groupName_;
  grove::Options settings_;  ///< The knobs set from code, for the groups split from this one.
  uint64_t sequence_ = 0;
  uint64_t monitoredBarriers_ = 0;
  std::unique_ptr<ProgressEngine> engine_;
};

}  // namespace grove_torch
