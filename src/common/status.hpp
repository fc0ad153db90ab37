// The outcome of internal work that may fail without throwing: progress loops that must not
// unwind (an executor step, a direct-path round), parsers, and checks whose failure the caller
// turns into a grove::Error with its own context. One form for all of them, instead of
// bool + out-parameter, optional + error string, or a string that is empty on success.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "grove/error.hpp"

namespace grove {

/// Success, or a failure: an ErrorCode and a message saying what went wrong.
class [[nodiscard]] Status {
 public:
  /// Success.
  Status() = default;

  /// A failure of kind `code` (never kSuccess) described by `message`.
  static Status failure(ErrorCode code, std::string message) {
    Status status;
    status.code_ = code;
    status.message_ = std::move(message);
    return status;
  }

  bool ok() const { return code_ == ErrorCode::kSuccess; }
  ErrorCode code() const { return code_; }
  /// Empty on success.
  const std::string& message() const { return message_; }

  /// Throws the failure as grove::Error; does nothing on success.
  void throwIfFailed() const {
    if (!ok()) throw Error(code_, message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kSuccess;
  std::string message_;
};

/// A value of type T, or the Status saying why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}  // NOLINT: implicit, like std::optional
  /// A failure; `status` must not be ok.
  Expected(Status status) : state_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(state_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  /// The failure (success when there is a value).
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }
  /// The failure's message, empty when there is a value.
  const std::string& message() const {
    static const std::string kNone;
    return ok() ? kNone : std::get<Status>(state_).message();
  }

  /// The value; throws the failure as grove::Error when there is none.
  T& value() & {
    if (!ok()) std::get<Status>(state_).throwIfFailed();
    return std::get<T>(state_);
  }
  const T& value() const& {
    if (!ok()) std::get<Status>(state_).throwIfFailed();
    return std::get<T>(state_);
  }
  T&& value() && { return std::move(value()); }

  T& operator*() { return std::get<T>(state_); }
  const T& operator*() const { return std::get<T>(state_); }
  T* operator->() { return &std::get<T>(state_); }
  const T* operator->() const { return &std::get<T>(state_); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace grove
