// grove's Store interface over torch's c10d::Store, so that a process group meets through
// the store torch already runs for it (a PrefixStore per group): no second server, no
// second port, and nothing left behind after destroy_process_group().
#pragma once

#include <grove/store.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace grove_torch {

class TorchStore : public grove::Store {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(std::string_view key, std::string_view value) override;
  std::string get(std::string_view key, std::chrono::milliseconds timeout) override;
  int64_t add(std::string_view key, int64_t delta) override;
  bool check(std::string_view key) override;
  void erase(std::string_view key) override;
  // setOnClose and failOnDisconnect: torch's store cannot tell when a client dies, so
  // grove's defaults (ignore) apply; a rank killed during init is found at its deadline.

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace grove_torch
