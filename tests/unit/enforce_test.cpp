// GROVE_ENFORCE*: the message names the file, the line, the condition and both operands, and
// the failure is a grove::Error of kind kInternalError. Status and Expected: one form for
// internal outcomes.
#include "common/enforce.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/status.hpp"
#include "plan/layout.hpp"

namespace grove {
namespace {

using ::testing::HasSubstr;

// The message of the grove::Error that `check` throws; fails the test if it throws none or
// another kind.
template <class Check>
std::string failureOf(Check check) {
  try {
    check();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInternalError);
    return error.what();
  }
  ADD_FAILURE() << "no grove::Error thrown";
  return {};
}

std::string at(int line) { return fmt::format("tests/unit/enforce_test.cpp:{}", line); }

TEST(Enforce, HoldingChecksDoNothing) {
  int evaluated = 0;
  GROVE_ENFORCE(++evaluated == 1);
  GROVE_ENFORCE_EQ(++evaluated, 2);
  GROVE_ENFORCE_NE(++evaluated, 0, "with", "details");
  GROVE_ENFORCE_LT(1, 2);
  GROVE_ENFORCE_LE(2, 2);
  GROVE_ENFORCE_GT(3, 2);
  GROVE_ENFORCE_GE(3, 3);
  EXPECT_EQ(evaluated, 3);  // each operand is evaluated exactly once
}

TEST(Enforce, ConditionMessageNamesFileLineAndCondition) {
  int line = 0;
  const std::string message = failureOf([&] {
    const int slots = 0;
    line = __LINE__ + 1;
    GROVE_ENFORCE(slots > 0);
  });
  EXPECT_EQ(message, "internal error at " + at(line) + ": check 'slots > 0' failed");
}

TEST(Enforce, ComparisonsPrintBothOperandsAndTheDetails) {
  int line = 0;
  const std::string eq = failureOf([&] {
    const int lane = 3;
    const int lanes = 4;
    line = __LINE__ + 1;
    GROVE_ENFORCE_EQ(lane, lanes, "channel", 7, "of", std::string("ring"));
  });
  EXPECT_EQ(eq, "internal error at " + at(line) +
                    ": check 'lane == lanes' failed (3 vs 4): channel 7 of ring");

  const std::string lt = failureOf([&] {
    line = __LINE__ + 1;
    GROVE_ENFORCE_LT(size_t{9}, size_t{8});
  });
  EXPECT_EQ(lt,
            "internal error at " + at(line) + ": check 'size_t{9} < size_t{8}' failed (9 vs 8)");

  auto op = [&](auto check) { return failureOf(check); };
  EXPECT_THAT(op([] { GROVE_ENFORCE_NE(1, 1); }), HasSubstr("check '1 != 1' failed (1 vs 1)"));
  EXPECT_THAT(op([] { GROVE_ENFORCE_LE(2, 1); }), HasSubstr("check '2 <= 1' failed (2 vs 1)"));
  EXPECT_THAT(op([] { GROVE_ENFORCE_GT(1, 2); }), HasSubstr("check '1 > 2' failed (1 vs 2)"));
  EXPECT_THAT(op([] { GROVE_ENFORCE_GE(1, 2); }), HasSubstr("check '1 >= 2' failed (1 vs 2)"));
}

TEST(Enforce, FilesAreNamedFromTheSourceRoot) {
  // A header reached through a layer's include view is named by its place in src/.
  EXPECT_EQ(
      failureOf([] { enforce::fail("/build/tree/layers/exec/plan/layout.hpp", 12, "x", "", ""); }),
      "internal error at src/plan/layout.hpp:12: check 'x' failed");
  EXPECT_EQ(
      failureOf([] { enforce::fail("/checkout/src/topo/rings.cpp", 5, "y", "(1 vs 2)", "z"); }),
      "internal error at src/topo/rings.cpp:5: check 'y' failed (1 vs 2): z");
}

TEST(Enforce, ABufferViewWithoutChunksIsAnInternalError) {
  plan::BufferView view{nullptr, 16, 0};
  EXPECT_THAT(
      failureOf([&] { (void)view.chunk(0); }),
      HasSubstr("check 'chunksPerBlock > 0u' failed (0 vs 0): a buffer view without chunks"));
  view.chunksPerBlock = 4;
  EXPECT_EQ(view.chunk(5).offset, 20u);
  EXPECT_EQ(view.chunk(5).length, 4u);
}

TEST(Status, DefaultIsSuccessAndFailureCarriesCodeAndMessage) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), ErrorCode::kSuccess);
  EXPECT_EQ(ok.message(), "");
  EXPECT_NO_THROW(ok.throwIfFailed());

  const Status failed = Status::failure(ErrorCode::kInvalidArgument, "root 9 is not a rank");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(failed.message(), "root 9 is not a rank");
  try {
    failed.throwIfFailed();
    ADD_FAILURE() << "no throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(error.what(), "root 9 is not a rank");
  }
}

TEST(Expected, HoldsAValueOrTheFailure) {
  Expected<int> value = 42;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 42);
  EXPECT_EQ(value.value(), 42);
  EXPECT_TRUE(value.status().ok());
  EXPECT_EQ(value.message(), "");

  Expected<std::string> none = Status::failure(ErrorCode::kSystemError, "line 3: bad");
  EXPECT_FALSE(none);
  EXPECT_EQ(none.status().code(), ErrorCode::kSystemError);
  EXPECT_EQ(none.message(), "line 3: bad");
  EXPECT_THROW((void)none.value(), Error);
}

}  // namespace
}  // namespace grove
