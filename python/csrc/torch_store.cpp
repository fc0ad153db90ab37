// TorchStore: each call forwards to torch's store; torch's errors become grove's.
#include "torch_store.hpp"

#include <grove/error.hpp>

namespace grove_torch {
namespace {

// Runs a call on torch's store; its exceptions (a lost TCPStore, a timeout) become
// grove::Error so that grove's rendezvous reports them in its own words.
template <class Call>
auto forward(const char* what, std::string_view key, Call&& call) {
  try {
    return call();
  } catch (const grove::Error&) {
    throw;
  } catch (const c10::DistStoreError& error) {
    throw grove::Error(grove::ErrorCode::kTimeout, std::string("torch store ") + what + " '" +
                                                       std::string(key) +
                                                       "': " + error.what_without_backtrace());
  } catch (const std::exception& error) {
    throw grove::Error(grove::ErrorCode::kRemoteError, std::string("torch store ") + what + " '" +
                                                           std::string(key) + "': " + error.what());
  }
}

}  // namespace

void TorchStore::set(std::string_view key, std::string_view value) {
  forward("set", key,
          [&] { store_->set(std::string(key), std::vector<uint8_t>(value.begin(), value.end())); });
}

std::string TorchStore::get(std::string_view key, std::chrono::milliseconds timeout) {
  return forward("get", key, [&] {
    store_->wait({std::string(key)}, timeout);
    std::vector<uint8_t> value = store_->get(std::string(key));
    return std::string(value.begin(), value.end());
  });
}

int64_t TorchStore::add(std::string_view key, int64_t delta) {
  return forward("add", key, [&] { return store_->add(std::string(key), delta); });
}

bool TorchStore::check(std::string_view key) {
  return forward("check", key, [&] { return store_->check({std::string(key)}); });
}

void TorchStore::erase(std::string_view key) {
  forward("erase", key, [&] { store_->deleteKey(std::string(key)); });
}

}  // namespace grove_torch
