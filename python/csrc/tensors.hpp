// Checks and staging of the tensors a call receives.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <vector>

namespace grove_torch {

/// Bytes of a tensor's elements.
inline size_t bytesOf(const at::Tensor& t) {
  return static_cast<size_t>(t.numel()) * t.element_size();
}

/// A CPU, dense tensor, or a clear error naming the call, the argument and the rank.
inline void checkTensor(const at::Tensor& t, const char* call, const char* what, int rank) {
  TORCH_CHECK(t.defined(), "grove ", call, " on rank ", rank, ": ", what, " is undefined");
  TORCH_CHECK(t.device().is_cpu(), "grove ", call, " on rank ", rank, ": ", what, " is on ",
              t.device(), " (the grove backend moves CPU tensors; expected device cpu)");
  TORCH_CHECK(t.layout() == at::kStrided, "grove ", call, " on rank ", rank, ": ", what,
              " is sparse (expected a dense tensor)");
}

/// The one tensor of a call that takes a list of one.
inline at::Tensor single(const std::vector<at::Tensor>& tensors, const char* call, const char* what,
                         int rank) {
  TORCH_CHECK(tensors.size() == 1, "grove ", call, " on rank ", rank, ": expected a list of one ",
              what, " tensor, got ", tensors.size());
  checkTensor(tensors[0], call, what, rank);
  return tensors[0];
}

/// Every tensor of `list` has the dtype and the number of elements of `like`.
inline void checkLike(const std::vector<at::Tensor>& list, const at::Tensor& like, const char* call,
                      const char* what, int rank) {
  for (size_t i = 0; i < list.size(); ++i) {
    checkTensor(list[i], call, what, rank);
    TORCH_CHECK(list[i].scalar_type() == like.scalar_type() && list[i].numel() == like.numel(),
                "grove ", call, " on rank ", rank, ": ", what, "[", i, "] has dtype ",
                list[i].scalar_type(), " and ", list[i].numel(), " elements (expected ",
                like.scalar_type(), " and ", like.numel(), ", as the input)");
  }
}

/// A tensor and the contiguous memory a call runs on: the tensor itself, or a contiguous
/// copy whose result copyBack() writes into the tensor.
struct Buffer {
  at::Tensor user;
  at::Tensor data;
  bool staged = false;

  explicit Buffer(const at::Tensor& t)
      : user(t), data(t.is_contiguous() ? t : t.contiguous()), staged(!t.is_contiguous()) {}
  void* ptr() const { return data.data_ptr(); }
  void copyBack() const {
    if (staged) user.copy_(data);
  }
};

/// The tensors of `list` side by side in one new contiguous tensor.
inline at::Tensor flatten(const std::vector<at::Tensor>& list) {
  std::vector<at::Tensor> flat;
  flat.reserve(list.size());
  for (const at::Tensor& t : list) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

/// Copies consecutive pieces of `flat` into the tensors of `list` (their shapes).
inline void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& list) {
  int64_t offset = 0;
  for (const at::Tensor& t : list) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

}  // namespace grove_torch
