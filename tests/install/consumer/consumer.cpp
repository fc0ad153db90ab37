// Smallest useful program against an installed grove: two in-process ranks sum a vector.
//
// Why it exists: it proves that the installed headers are complete (nothing includes a file
// from src/), that find_package(grove) gives working targets, and that the libraries link
// and run without the build tree. Exit code 0 when the result is exact, 1 otherwise.
#include <cstdio>
#include <exception>
#include <grove/grove.hpp>
#include <thread>
#include <vector>

int main(int /*argc*/, char** argv) {
  constexpr size_t kCount = 1000;
  try {
    std::vector<grove::Communicator> comms = grove::Communicator::createInProcess(2);
    std::vector<std::vector<float>> results(comms.size());
    std::vector<std::exception_ptr> errors(comms.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < comms.size(); ++r) {
      threads.emplace_back([&, r] {
        try {
          std::vector<float> input(kCount);
          for (size_t i = 0; i < kCount; ++i) input[i] = static_cast<float>(i * (r + 1));
          results[r].assign(kCount, -1.0f);
          comms[r].allReduce(input.data(), results[r].data(), kCount, grove::DataType::kFloat32,
                             grove::ReduceOp::kSum);
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    for (size_t r = 0; r < results.size(); ++r) {
      for (size_t i = 0; i < kCount; ++i) {
        float expected = static_cast<float>(i * 3);  // i * 1 + i * 2
        if (results[r][i] != expected) {
          std::fprintf(stderr, "consumer: rank %zu element %zu is %g, expected %g\n", r, i,
                       static_cast<double>(results[r][i]), static_cast<double>(expected));
          return 1;
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  std::printf("%s: grove %s allReduce over 2 ranks OK\n", argv[0], GROVE_VERSION_STRING);
  return 0;
}
