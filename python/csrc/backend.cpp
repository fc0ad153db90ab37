// GroveBackend: construction, the queue, and the reducing collectives (allreduce, reduce,
// reduce-scatter). backend_moves.cpp has the collectives that move bytes, backend_p2p.cpp
// send/recv and the barriers.
#include "backend.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "dtypes.hpp"
#include "tensors.hpp"
#include "torch_store.hpp"

namespace grove_torch {

GroveBackend::GroveBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout, const std::string& groupName,
                           const grove::Options& settings)
    : c10d::Backend(rank, size),
      store_(store),
      timeout_(timeout),
      groupName_(groupName),
      settings_(settings) {
  grove::StoreJoinOptions options;
  options.group = groupName;
  options.timeout = timeout;
  try {
    grove::Communicator comm = grove::Communicator::fromStore(std::make_shared<TorchStore>(store),
                                                              rank, size, options, settings);
    engine_ = std::make_unique<ProgressEngine>(std::move(comm), rank);
  } catch (const grove::Error& error) {
    std::rethrow_exception(backendError(error.what()));
  }
}

GroveBackend::~GroveBackend() { shutdown(); }

c10::intrusive_ptr<c10d::Backend> GroveBackend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                      const std::vector<int>& ranks,
                                                      const c10::intrusive_ptr<Options>& opts) {
  std::vector<bool> seen(static_cast<size_t>(size_), false);
  for (int q : ranks) {
    if (q < 0 || q >= size_ || seen[static_cast<size_t>(q)]) {
      std::rethrow_exception(backendError(
          "grove split_group on rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
          ": rank " + std::to_string(q) + " in the split's ranks is " +
          (q < 0 || q >= size_ ? "not a rank of the parent group" : "listed twice")));
    }
    seen[static_cast<size_t>(q)] = true;
  }
  auto mine = std::find(ranks.begin(), ranks.end(), rank_);
  if (mine == ranks.end()) return nullptr;
  const std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  const std::string name =
      opts && !opts->group_name.empty() ? opts->group_name : groupName_ + ":split";
  return c10::make_intrusive<GroveBackend>(store, static_cast<int>(mine - ranks.begin()),
                                           static_cast<int>(ranks.size()), timeout, name,
                                           settings_);
}

c10::intrusive_ptr<c10d::Backend::Options> GroveBackend::getBackendOptions() {
  auto options = c10::make_intrusive<Options>(getBackendName(), timeout_);
  options->group_name = groupName_;
  return options;
}

void GroveBackend::abort() {
  if (engine_) engine_->abort();
}

void GroveBackend::shutdown() {
  if (engine_) engine_->shutdown();
}

std::chrono::milliseconds GroveBackend::timeoutOf(std::chrono::milliseconds requested) const {
  return requested == c10d::kUnsetTimeout ? timeout_ : requested;
}

c10::intrusive_ptr<c10d::Work> GroveBackend::post(c10d::OpType type, const char* title,
                                                  std::vector<at::Tensor> outputs,
                                                  std::chrono::milliseconds timeout, Run run,
                                                  std::function<void()> finish, bool p2p,
                                                  bool blocking) {
  ++sequence_;
  auto work = c10::make_intrusive<GroveWork>(rank_, type, title, std::move(outputs), timeout);
  Task task;
  task.work = work;
  task.run = std::move(run);
  task.finish = std::move(finish);
  task.timeout = timeout;
  task.p2p = p2p;
  if (blocking && !p2p && engine_->runInline(task)) return work;
  engine_->enqueue(std::move(task));
  return work;
}

c10::intrusive_ptr<c10d::Work> GroveBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceOptions& opts) {
  at::Tensor tensor = single(tensors, "allreduce", "input", rank_);
  Reduction r = reductionFor(tensor, opts.reduceOp, "allreduce", rank_);
  Buffer buffer(tensor);
  const size_t count = static_cast<size_t>(tensor.numel()) * r.elementsPerItem;
  return post(
      c10d::OpType::ALLREDUCE, "grove:all_reduce", tensors, timeoutOf(opts.timeout),
      [buffer, r, count](grove::Communicator& comm, const grove::CallOptions& o) {
        if (r.premul != 1.0) buffer.data.mul_(r.premul);
        comm.allReduce(buffer.ptr(), buffer.ptr(), count, r.type, r.op, o);
      },
      [buffer] { buffer.copyBack(); }, false, !opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "grove allreduce_coalesced on rank ", rank_,
              ": expected at least one tensor");
  for (const at::Tensor& t : tensors) {
    checkTensor(t, "allreduce_coalesced", "input", rank_);
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "grove allreduce_coalesced on rank ",
                rank_, ": tensors of dtypes ", tensors[0].scalar_type(), " and ", t.scalar_type(),
                " (expected one dtype)");
  }
  Reduction r = reductionFor(tensors[0], opts.reduceOp, "allreduce_coalesced", rank_);
  std::vector<at::Tensor> list = tensors;
  return post(c10d::OpType::ALLREDUCE_COALESCED, "grove:all_reduce_coalesced", tensors,
              timeoutOf(opts.timeout),
              [list, r](grove::Communicator& comm, const grove::CallOptions& o) {
                at::Tensor flat = flatten(list);
                if (r.premul != 1.0) flat.mul_(r.premul);
                const size_t count = static_cast<size_t>(flat.numel()) * r.elementsPerItem;
                comm.allReduce(flat.data_ptr(), flat.data_ptr(), count, r.type, r.op, o);
                unflatten(flat, list);
              });
}

c10::intrusive_ptr<c10d::Work> GroveBackend::reduce(std::vector<at::Tensor>& tensors,
                                                    const c10d::ReduceOptions& opts) {
  at::Tensor tensor = single(tensors, "reduce", "input", rank_);
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "grove reduce on rank ", rank_,
              ": root ", opts.rootRank, " (expected a rank in [0, ", size_, "))");
  Reduction r = reductionFor(tensor, opts.reduceOp, "reduce", rank_);
  Buffer buffer(tensor);
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = root == rank_;
  const size_t count = static_cast<size_t>(tensor.numel()) * r.elementsPerItem;
  // Off the root the input is only read: a PREMUL_SUM scales a copy, not the caller's tensor.
  return post(
      c10d::OpType::REDUCE, "grove:reduce", tensors, timeoutOf(opts.timeout),
      [buffer, r, root, isRoot, count](grove::Communicator& comm, const grove::CallOptions& o) {
        at::Tensor input = buffer.data;
        if (r.premul != 1.0) input = isRoot ? input.mul_(r.premul) : input * r.premul;
        comm.reduce(input.data_ptr(), isRoot ? input.data_ptr() : nullptr, count, r.type, r.op,
                    root, o);
      },
      [buffer, isRoot] {
        if (isRoot) buffer.copyBack();
      });
}

c10::intrusive_ptr<c10d::Work> GroveBackend::reduceScatterFlat(
    const at::Tensor& output, const at::Tensor& input, const c10d::ReduceScatterOptions& opts,
    const char* call) {
  checkTensor(output, call, "output", rank_);
  checkTensor(input, call, "input", rank_);
  TORCH_CHECK(
      input.scalar_type() == output.scalar_type() && input.numel() == output.numel() * size_,
      "grove ", call, " on rank ", rank_, ": input has dtype ", input.scalar_type(), " and ",
      input.numel(), " elements, output ", output.scalar_type(), " and ", output.numel(),
      " (expected one dtype and input = ", size_, " x output elements)");
  Reduction r = reductionFor(output, opts.reduceOp, call, rank_);
  Buffer out(output);
  at::Tensor in = input.is_contiguous() ? input : input.contiguous();
  const size_t count = static_cast<size_t>(output.numel()) * r.elementsPerItem;
  return post(
      c10d::OpType::REDUCE_SCATTER, "grove:reduce_scatter", {output}, timeoutOf(opts.timeout),
      [out, in, r, count](grove::Communicator& comm, const grove::CallOptions& o) {
        at::Tensor send = r.premul != 1.0 ? in * r.premul : in;
        comm.reduceScatter(send.data_ptr(), out.ptr(), count, r.type, r.op, o);
      },
      [out] { out.copyBack(); }, false, !opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  return reduceScatterFlat(output, input, opts, "reduce_scatter_tensor");
}

c10::intrusive_ptr<c10d::Work> GroveBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  at::Tensor output = single(outputs, "reduce_scatter", "output", rank_);
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
              "grove reduce_scatter on rank ", rank_, ": expected one list of ", size_,
              " input tensors");
  checkLike(inputs[0], output, "reduce_scatter", "input_list", rank_);
  return reduceScatterFlat(output, flatten(inputs[0]), opts, "reduce_scatter");
}

c10::intrusive_ptr<c10d::Work> GroveBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "grove reduce_scatter_tensor_coalesced on rank ",
              rank_, ": ", outputs.size(), " outputs and ", inputs.size(),
              " inputs (expected as many)");
  return eachPair(outputs.size(), [&](size_t i) {
    return reduceScatterFlat(outputs[i], inputs[i], opts, "reduce_scatter_tensor_coalesced");
  });
}

}  // namespace grove_torch
