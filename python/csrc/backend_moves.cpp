// GroveBackend: the collectives that move tensors without reducing them (broadcast,
// all-gather, gather, scatter, all-to-all). They move bytes (grove's uint8), so every
// dtype works; list forms stage through one contiguous tensor.
#include <numeric>

#include "backend.hpp"
#include "tensors.hpp"

namespace grove_torch {
namespace {

constexpr grove::DataType kBytes = grove::DataType::kUint8;

void checkRoot(int64_t root, int size, const char* call, int rank) {
  TORCH_CHECK(root >= 0 && root < size, "grove ", call, " on rank ", rank, ": root ", root,
              " (expected a rank in [0, ", size, "))");
}

}  // namespace

c10::intrusive_ptr<c10d::Work> GroveBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                       const c10d::BroadcastOptions& opts) {
  at::Tensor tensor = single(tensors, "broadcast", "tensor", rank_);
  checkRoot(opts.rootRank, size_, "broadcast", rank_);
  Buffer buffer(tensor);
  const int root = static_cast<int>(opts.rootRank);
  return post(
      c10d::OpType::BROADCAST, "grove:broadcast", tensors, timeoutOf(opts.timeout),
      [buffer, root](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.broadcast(buffer.ptr(), buffer.ptr(), bytesOf(buffer.data), kBytes, root, o);
      },
      [buffer] { buffer.copyBack(); }, false, !opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::AllgatherOptions& opts) {
  checkTensor(output, "all_gather_into_tensor", "output", rank_);
  checkTensor(input, "all_gather_into_tensor", "input", rank_);
  TORCH_CHECK(
      input.scalar_type() == output.scalar_type() && output.numel() == input.numel() * size_,
      "grove all_gather_into_tensor on rank ", rank_, ": input has dtype ", input.scalar_type(),
      " and ", input.numel(), " elements, output ", output.scalar_type(), " and ", output.numel(),
      " (expected one dtype and output = ", size_, " x input elements)");
  Buffer out(output);
  at::Tensor in = input.is_contiguous() ? input : input.contiguous();
  return post(
      c10d::OpType::_ALLGATHER_BASE, "grove:all_gather_into_tensor", {output},
      timeoutOf(opts.timeout),
      [out, in](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.allGather(in.data_ptr(), out.ptr(), bytesOf(in), kBytes, o);
      },
      [out] { out.copyBack(); }, false, !opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  at::Tensor input = single(inputs, "all_gather", "input", rank_);
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
              "grove all_gather on rank ", rank_, ": expected one list of ", size_,
              " output tensors");
  checkLike(outputs[0], input, "all_gather", "tensor_list", rank_);
  std::vector<at::Tensor> list = outputs[0];
  at::Tensor in = input.is_contiguous() ? input : input.contiguous();
  at::Tensor gathered = at::empty({input.numel() * size_}, input.options());
  return post(
      c10d::OpType::ALLGATHER, "grove:all_gather", list, timeoutOf(opts.timeout),
      [in, gathered](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.allGather(in.data_ptr(), gathered.data_ptr(), bytesOf(in), kBytes, o);
      },
      [gathered, list] { unflatten(gathered, list); }, false, !opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "grove allgather_into_tensor_coalesced on rank ",
              rank_, ": ", outputs.size(), " outputs and ", inputs.size(),
              " inputs (expected as many)");
  return eachPair(outputs.size(),
                  [&](size_t i) { return _allgather_base(outputs[i], inputs[i], opts); });
}

c10::intrusive_ptr<c10d::Work> GroveBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                    std::vector<at::Tensor>& inputs,
                                                    const c10d::GatherOptions& opts) {
  at::Tensor input = single(inputs, "gather", "input", rank_);
  checkRoot(opts.rootRank, size_, "gather", rank_);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> list;
  at::Tensor gathered;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
                "grove gather on rank ", rank_, " (the root): expected one list of ", size_,
                " output tensors");
    checkLike(outputs[0], input, "gather", "gather_list", rank_);
    list = outputs[0];
    gathered = at::empty({input.numel() * size_}, input.options());
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "grove gather on rank ", rank_,
                ": output tensors given on a rank that is not the root ", root);
  }
  at::Tensor in = input.is_contiguous() ? input : input.contiguous();
  return post(
      c10d::OpType::GATHER, "grove:gather", list, timeoutOf(opts.timeout),
      [in, gathered, root](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.gather(in.data_ptr(), gathered.defined() ? gathered.data_ptr() : nullptr, bytesOf(in),
                    kBytes, root, o);
      },
      [gathered, list] {
        if (gathered.defined()) unflatten(gathered, list);
      });
}

c10::intrusive_ptr<c10d::Work> GroveBackend::scatter(std::vector<at::Tensor>& outputs,
                                                     std::vector<std::vector<at::Tensor>>& inputs,
                                                     const c10d::ScatterOptions& opts) {
  at::Tensor output = single(outputs, "scatter", "output", rank_);
  checkRoot(opts.rootRank, size_, "scatter", rank_);
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor blocks;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
                "grove scatter on rank ", rank_, " (the root): expected one list of ", size_,
                " input tensors");
    checkLike(inputs[0], output, "scatter", "scatter_list", rank_);
    blocks = flatten(inputs[0]);
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "grove scatter on rank ", rank_,
                ": input tensors given on a rank that is not the root ", root);
  }
  Buffer out(output);
  return post(
      c10d::OpType::SCATTER, "grove:scatter", outputs, timeoutOf(opts.timeout),
      [blocks, out, root](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.scatter(blocks.defined() ? blocks.data_ptr() : nullptr, out.ptr(), bytesOf(out.data),
                     kBytes, root, o);
      },
      [out] { out.copyBack(); }, false, !opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                           std::vector<int64_t>& outputSplits,
                                                           std::vector<int64_t>& inputSplits,
                                                           const c10d::AllToAllOptions& opts) {
  const char* call = "all_to_all_single";
  checkTensor(output, call, "output", rank_);
  checkTensor(input, call, "input", rank_);
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "grove ", call, " on rank ", rank_,
              ": input dtype ", input.scalar_type(), ", output ", output.scalar_type(),
              " (expected one dtype)");
  // Split sizes count rows (the first dimension); no splits: size() equal blocks.
  auto layout = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* what) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const size_t rowBytes = rows == 0 ? 0 : bytesOf(t) / static_cast<size_t>(rows);
    std::vector<size_t> counts(size_);
    if (splits.empty()) {
      TORCH_CHECK(rows % size_ == 0, "grove ", call, " on rank ", rank_, ": ", what, " has ", rows,
                  " rows, not divisible by the group size ", size_, " (pass split sizes)");
      std::fill(counts.begin(), counts.end(), rowBytes * static_cast<size_t>(rows / size_));
    } else {
      TORCH_CHECK(splits.size() == static_cast<size_t>(size_), "grove ", call, " on rank ", rank_,
                  ": ", splits.size(), " ", what, " split sizes (expected ", size_, ")");
      int64_t total = 0;
      for (int q = 0; q < size_; ++q) {
        TORCH_CHECK(splits[q] >= 0, "grove ", call, " on rank ", rank_, ": ", what, " split size ",
                    splits[q], " for rank ", q, " (expected >= 0)");
        total += splits[q];
        counts[q] = rowBytes * static_cast<size_t>(splits[q]);
      }
      TORCH_CHECK(total == rows, "grove ", call, " on rank ", rank_, ": ", what,
                  " split sizes add up to ", total, " rows, the tensor has ", rows);
    }
    std::vector<size_t> displs(size_, 0);
    for (int q = 1; q < size_; ++q) displs[q] = displs[q - 1] + counts[q - 1];
    return std::make_pair(counts, displs);
  };
  auto [sendCounts, sendDispls] = layout(input, inputSplits, "input");
  auto [recvCounts, recvDispls] = layout(output, outputSplits, "output");
  Buffer out(output);
  at::Tensor in = input.is_contiguous() ? input : input.contiguous();
  return post(
      c10d::OpType::ALLTOALL_BASE, "grove:all_to_all_single", {output}, timeoutOf(opts.timeout),
      [=](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.allToAllv(in.data_ptr(), sendCounts, sendDispls, out.ptr(), recvCounts, recvDispls,
                       kBytes, o);
      },
      [out] { out.copyBack(); }, false, !opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> GroveBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllToAllOptions& opts) {
  const char* call = "all_to_all";
  TORCH_CHECK(
      outputs.size() == static_cast<size_t>(size_) && inputs.size() == static_cast<size_t>(size_),
      "grove ", call, " on rank ", rank_, ": ", inputs.size(), " inputs and ", outputs.size(),
      " outputs (expected ", size_, " of each)");
  std::vector<size_t> sendCounts(size_), sendDispls(size_, 0), recvCounts(size_),
      recvDispls(size_, 0);
  for (int q = 0; q < size_; ++q) {
    checkTensor(inputs[q], call, "input", rank_);
    checkTensor(outputs[q], call, "output", rank_);
    TORCH_CHECK(inputs[q].scalar_type() == inputs[0].scalar_type() &&
                    outputs[q].scalar_type() == inputs[0].scalar_type(),
                "grove ", call, " on rank ", rank_, ": tensors of several dtypes (expected one)");
    sendCounts[q] = bytesOf(inputs[q]);
    recvCounts[q] = bytesOf(outputs[q]);
    if (q > 0) {
      sendDispls[q] = sendDispls[q - 1] + sendCounts[q - 1];
      recvDispls[q] = recvDispls[q - 1] + recvCounts[q - 1];
    }
  }
  at::Tensor in = flatten(inputs);
  int64_t outElements = 0;
  for (const at::Tensor& t : outputs) outElements += t.numel();
  at::Tensor received = at::empty({outElements}, outputs[0].options());
  std::vector<at::Tensor> list = outputs;
  return post(
      c10d::OpType::ALLTOALL, "grove:all_to_all", outputs, timeoutOf(opts.timeout),
      [=](grove::Communicator& comm, const grove::CallOptions& o) {
        comm.allToAllv(in.data_ptr(), sendCounts, sendDispls, received.data_ptr(), recvCounts,
                       recvDispls, kBytes, o);
      },
      [received, list] { unflatten(received, list); });
}

}  // namespace grove_torch
