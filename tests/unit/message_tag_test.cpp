// exec::describeTag names a message's algorithm from the names handed down to it
// (exec::nameAlgorithms): the executor's layer cannot include the algorithm registry.
#include "exec/message_tag.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "grove/types.hpp"

namespace grove::exec {
namespace {

transport::MessageTag ringAllReduce(std::string_view algorithm) {
  transport::MessageTag tag;
  tag.call = 3;
  tag.count = 1024;
  tag.collective = 0;  // allreduce
  tag.type = static_cast<uint8_t>(DataType::kFloat32);
  tag.op = static_cast<uint8_t>(ReduceOp::kSum);
  tag.algorithm = algorithmTag(algorithm);
  return tag;
}

TEST(MessageTagNames, UnnamedAlgorithmsPrintTheirHashNamedOnesTheirName) {
  const transport::MessageTag tag = ringAllReduce("layers_test_algorithm");
  EXPECT_EQ(describeTag(tag), fmt::format("allreduce, collective #3 (count 1024 float sum, "
                                          "algorithm {:#010x})",
                                          algorithmTag("layers_test_algorithm")));
  nameAlgorithms({"layers_test_algorithm", "another_test_algorithm"});
  nameAlgorithms({"layers_test_algorithm"});  // again: no effect
  EXPECT_EQ(describeTag(tag),
            "allreduce, collective #3 (count 1024 float sum, algorithm layers_test_algorithm)");
  nameAlgorithms({"direct"});
  EXPECT_EQ(describeTag(ringAllReduce("direct")),
            "allreduce, collective #3 (count 1024 float sum, algorithm direct)");
}

}  // namespace
}  // namespace grove::exec
