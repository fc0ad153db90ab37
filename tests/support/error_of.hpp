// The grove::Error a call throws, for tests that check its code and message.
#pragma once

#include "grove/error.hpp"

namespace grove::testing {

/// What `call` threw; an Error of code kSuccess saying "no error thrown" when it returned.
template <class F>
Error errorOf(F&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error;
  }
  return Error(ErrorCode::kSuccess, "no error thrown");
}

}  // namespace grove::testing
