// The single-host direct path on ranks that are threads: allReduce, reduceScatter, allGather
// and broadcast reading their peers' buffers in place. With GROVE_DIRECT_MIN_BYTES=1 every
// non-empty call of those collectives on more than one rank goes direct; with GROVE_DIRECT=0
// none does. Either way every result must be exactly the normal path's.
//
// Why these shapes: the direct path takes its addresses from the buffer descriptors the ranks
// exchange, so what it can get wrong is where it reads and writes — in-place forms whose input
// lies inside the output (allGather) or the output inside the input (reduceScatter),
// sub-buffers at odd element offsets, blocks of a count no rank count divides, buffers that
// are freed and reallocated at the same address, registered (grove::allocate) and ordinary
// memory mixed between ranks and within a call. Inputs differ per rank, element and call;
// outputs start as a byte no result has; guard bytes surround every buffer.
//
// Whether a call really ran direct is read from GROVE_TRACE's call records ("algorithm":
// "direct": the one-sided plans of src/algo/direct.cpp).
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "grove/memory.hpp"
#include "multirank/harness.hpp"

namespace grove::mr {
namespace {

constexpr size_t kCounts[] = {0, 1, 7, 1000};
// Divisible by no rank count > 1 tested; several allreduce rounds of the direct path. Under
// ThreadSanitizer (10-20x slower) a smaller count keeps the TSan stage short: one round.
#if defined(__SANITIZE_THREAD__)
constexpr size_t kLarge = (size_t{1} << 16) + 3;
#else
constexpr size_t kLarge = (size_t{1} << 20) + 3;
#endif
// Above GROVE_DIRECT_MIN_BYTES' default in bytes for any element type of 4 bytes.
constexpr size_t kAboveDefault = (size_t{1} << 20) + 3;
constexpr std::byte kFill{0x5A};
constexpr std::byte kGuardByte{0xA5};
constexpr size_t kGuard = 64;

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kBroadcast };

const char* toString(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allReduce";
    case Collective::kReduceScatter:
      return "reduceScatter";
    case Collective::kAllGather:
      return "allGather";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

/// Which memory each rank gives to the send and receive buffers of a call.
enum class Mode {
  kOrdinary,       ///< Heap memory everywhere.
  kRegistered,     ///< grove::allocate everywhere.
  kMixedRanks,     ///< Even ranks registered, odd ranks ordinary.
  kRegisteredIn,   ///< Send registered, receive ordinary.
  kRegisteredOut,  ///< Send ordinary, receive registered.
};

const char* toString(Mode mode) {
  switch (mode) {
    case Mode::kOrdinary:
      return "ordinary";
    case Mode::kRegistered:
      return "registered";
    case Mode::kMixedRanks:
      return "even-ranks-registered";
    case Mode::kRegisteredIn:
      return "registered-in";
    case Mode::kRegisteredOut:
      return "registered-out";
  }
  return "?";
}

bool registeredFor(Mode mode, int rank, bool send) {
  switch (mode) {
    case Mode::kOrdinary:
      return false;
    case Mode::kRegistered:
      return true;
    case Mode::kMixedRanks:
      return rank % 2 == 0;
    case Mode::kRegisteredIn:
      return send;
    case Mode::kRegisteredOut:
      return !send;
  }
  return false;
}

/// `bytes` bytes of kFill at `offset` bytes into a region of ordinary or registered memory;
/// every other byte of the region is a guard byte that no call may change. A registered
/// region starts at its allocation (offset 0 is the allocation's first byte); an ordinary
/// one has kGuard bytes before the offset too.
class Region {
 public:
  Region(bool registered, size_t bytes, size_t offset = 0)
      : registered_(registered), bytes_(bytes), lead_(offset + (registered ? 0 : kGuard)) {
    size_ = lead_ + bytes + kGuard;
    if (registered) {
      base_ = static_cast<std::byte*>(allocate(size_));
    } else {
      heap_.resize(size_);
      base_ = heap_.data();
    }
    std::memset(base_, static_cast<int>(kGuardByte), size_);
    std::memset(data(), static_cast<int>(kFill), bytes_);
  }
  ~Region() {
    if (registered_) deallocate(base_);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  std::byte* data() { return base_ + lead_; }
  bool intact() const {
    for (size_t i = 0; i < size_; ++i) {
      if ((i < lead_ || i >= lead_ + bytes_) && base_[i] != kGuardByte) return false;
    }
    return true;
  }

 private:
  bool registered_;
  size_t bytes_;
  size_t lead_;
  size_t size_ = 0;
  std::byte* base_ = nullptr;
  std::vector<std::byte> heap_;
};

/// One call of one of the four collectives, as every rank makes it.
struct Case {
  Collective collective = Collective::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;
  int root = 0;
  bool inPlace = false;
  Mode mode = Mode::kOrdinary;
  size_t offsetElements = 0;  ///< Where in its region each buffer starts.
  uint32_t salt = 0;          ///< Shifts every input so that successive calls differ.

  std::string label(int nranks) const {
    std::string extra = std::string("mode=") + toString(mode) +
                        " offset=" + std::to_string(offsetElements) +
                        " salt=" + std::to_string(salt);
    if (collective == Collective::kBroadcast) extra += " root=" + std::to_string(root);
    if (collective == Collective::kAllReduce || collective == Collective::kReduceScatter) {
      extra += std::string(" op=") + std::string(grove::toString(op));
    }
    return mr::label(toString(collective), type, count, "", inPlace, nranks, extra);
  }
};

/// Makes `c` on `comm`'s rank and checks the result (and that the send buffer out of place
/// and every guard byte are unchanged) with gtest expectations.
void runCase(Communicator& comm, const Case& c) {
  const int n = comm.size();
  const int rank = comm.rank();
  const size_t width = dataTypeSize(c.type);
  const size_t bytes = c.count * width;
  const size_t offset = c.offsetElements * width;
  const bool reducing =
      c.collective == Collective::kAllReduce || c.collective == Collective::kReduceScatter;
  // Elements of each buffer, and where the in-place forms put the other buffer.
  size_t sendCount = c.count;
  size_t recvCount = c.count;
  if (c.collective == Collective::kReduceScatter) sendCount *= n;
  if (c.collective == Collective::kAllGather) recvCount *= n;
  Region sendRegion(registeredFor(c.mode, rank, true), sendCount * width, offset);
  Region recvRegion(registeredFor(c.mode, rank, false), recvCount * width, offset);
  std::byte* send = sendRegion.data();
  std::byte* recv = recvRegion.data();
  if (c.inPlace) {
    if (c.collective == Collective::kAllGather) {
      send = recv + rank * bytes;
    } else if (c.collective == Collective::kReduceScatter) {
      recv = send + rank * bytes;
    } else {
      recv = send;
    }
  }
  // Inputs.
  std::vector<std::byte> input(sendCount * width);
  if (reducing) {
    fillReductionInput(input.data(), sendCount, c.type, c.op, rank, c.salt);
  } else if (c.collective == Collective::kAllGather || rank == c.root) {
    fillPattern(input.data(), input.size(), rank, 0, c.salt);
  }
  if (reducing || c.collective == Collective::kAllGather || rank == c.root) {
    if (!input.empty()) std::memcpy(send, input.data(), input.size());
  }
  // The call.
  switch (c.collective) {
    case Collective::kAllReduce:
      comm.allReduce(send, recv, c.count, c.type, c.op);
      break;
    case Collective::kReduceScatter:
      comm.reduceScatter(send, recv, c.count, c.type, c.op);
      break;
    case Collective::kAllGather:
      comm.allGather(send, recv, c.count, c.type);
      break;
    case Collective::kBroadcast:
      comm.broadcast(send, recv, c.count, c.type, c.root);
      break;
  }
  // Expected output.
  std::vector<std::byte> want;
  switch (c.collective) {
    case Collective::kAllReduce:
      want = expectedReduction(c.type, c.op, n, c.count, c.salt);
      break;
    case Collective::kReduceScatter:
      want = expectedReduction(c.type, c.op, n, c.count, c.salt + rank * c.count);
      break;
    case Collective::kAllGather:
      want.resize(recvCount * width);
      for (int q = 0; q < n; ++q) fillPattern(want.data() + q * bytes, bytes, q, 0, c.salt);
      break;
    case Collective::kBroadcast:
      want.resize(bytes);
      fillPattern(want.data(), bytes, c.root, 0, c.salt);
      break;
  }
  const std::string where = c.label(n);
  const size_t outCount = want.size() / width;
  EXPECT_EQ(describeDifference(recv, want.data(), outCount, c.type), "") << where;
  if (!c.inPlace && (reducing || c.collective == Collective::kAllGather || rank == c.root)) {
    EXPECT_EQ(describeDifference(send, input.data(), sendCount, c.type), "")
        << where << ": the send buffer changed";
  }
  EXPECT_TRUE(sendRegion.intact()) << where << ": a byte around the send buffer changed";
  EXPECT_TRUE(recvRegion.intact()) << where << ": a byte around the receive buffer changed";
}

/// Direct for every call that can go direct: GROVE_DIRECT=1, GROVE_DIRECT_MIN_BYTES=1.
Options directAlways() {
  Options options;
  options.set("GROVE_DIRECT", "1").set("GROVE_DIRECT_MIN_BYTES", "1");
  return options;
}

/// Runs `cases` in order on every rank of an in-process group of `nranks` (directAlways).
void runCases(int nranks, const std::vector<Case>& cases) {
  runRanks(
      nranks,
      [&](Communicator& comm) {
        for (const Case& c : cases) runCase(comm, c);
      },
      directAlways());
}

/// The cases of one collective over every type (and operator) at the small counts, in and
/// out of place, broadcast from every root.
std::vector<Case> everyShape(Collective collective, int nranks, Mode mode) {
  std::vector<Case> cases;
  const bool reducing =
      collective == Collective::kAllReduce || collective == Collective::kReduceScatter;
  const std::vector<DataType> types =
      reducing ? allTypes()
               : std::vector<DataType>{DataType::kInt8, DataType::kFloat16, DataType::kFloat64};
  const std::vector<ReduceOp> ops = reducing ? allOps() : std::vector<ReduceOp>{ReduceOp::kSum};
  const int roots = collective == Collective::kBroadcast ? nranks : 1;
  uint32_t salt = 0;
  for (DataType type : types) {
    for (ReduceOp op : ops) {
      if (!acceptsOp(type, op)) continue;
      for (size_t count : kCounts) {
        for (int root = 0; root < roots; ++root) {
          for (bool inPlace : {false, true}) {
            cases.push_back(Case{collective, type, op, count, root, inPlace, mode, 0, salt++});
          }
        }
      }
    }
  }
  return cases;
}

// ---- GROVE_TRACE: which calls ran direct ------------------------------------------------------

struct TracedCall {
  std::string collective;  ///< plan::toString's name, e.g. "allreduce".
  uint64_t bytes = 0;      ///< count × element size.
  std::string algorithm;
};

/// Runs `fn` on every rank of a fresh group of `nranks` with `options` and GROVE_TRACE set, and
/// returns each rank's traced calls (written when the group is destroyed).
std::vector<std::vector<TracedCall>> runTraced(int nranks,
                                               const std::function<void(Communicator&)>& fn,
                                               Options options = directAlways()) {
  namespace fs = std::filesystem;
  static std::atomic<int> serial{0};
  const fs::path dir = fs::temp_directory_path() / ("grove-direct-" + std::to_string(getpid()) +
                                                    "-" + std::to_string(serial++));
  fs::create_directories(dir);
  {
    options.set("GROVE_TRACE", (dir / "trace-%r.json").string());
    auto comms = Communicator::createInProcess(nranks, options);
    runOnComms(comms, fn);
  }
  std::vector<std::vector<TracedCall>> calls(static_cast<size_t>(nranks));
  for (int rank = 0; rank < nranks; ++rank) {
    std::ifstream in(dir / ("trace-" + std::to_string(rank) + ".json"));
    if (!in.good()) {
      ADD_FAILURE() << "rank " << rank << " wrote no trace";
      continue;
    }
    const nlohmann::json trace = nlohmann::json::parse(in);
    for (const auto& event : trace["traceEvents"]) {
      if (event.value("cat", "") != "call") continue;
      const std::string name = event["name"];
      calls[rank].push_back(TracedCall{name.substr(0, name.find(' ')),
                                       event["args"]["bytes"].get<uint64_t>(),
                                       event["args"]["algorithm"].get<std::string>()});
    }
  }
  fs::remove_all(dir);
  return calls;
}

/// Every call of the four collectives with at least `minBytes` bytes ran direct on every
/// rank, and every other call did not (calls of 0 bytes may go either way).
void expectDirect(const std::vector<std::vector<TracedCall>>& calls, uint64_t minBytes) {
  static const std::set<std::string> kDirect = {"allreduce", "reducescatter", "allgather",
                                                "broadcast"};
  for (size_t rank = 0; rank < calls.size(); ++rank) {
    for (const TracedCall& call : calls[rank]) {
      if (call.bytes == 0) continue;
      const bool want = kDirect.count(call.collective) > 0 && call.bytes >= minBytes;
      EXPECT_EQ(call.algorithm == "direct", want)
          << "rank " << rank << ": " << call.collective << " of " << call.bytes << " bytes ran "
          << call.algorithm;
    }
  }
}

// ---- the tests ---------------------------------------------------------------------------------

class DirectThreads : public ::testing::TestWithParam<int> {};

TEST_P(DirectThreads, AllReduceEveryTypeAndOperator) {
  runCases(GetParam(), everyShape(Collective::kAllReduce, GetParam(), Mode::kOrdinary));
}

TEST_P(DirectThreads, ReduceScatterEveryTypeAndOperator) {
  runCases(GetParam(), everyShape(Collective::kReduceScatter, GetParam(), Mode::kOrdinary));
}

TEST_P(DirectThreads, AllGather) {
  runCases(GetParam(), everyShape(Collective::kAllGather, GetParam(), Mode::kOrdinary));
}

TEST_P(DirectThreads, BroadcastFromEveryRoot) {
  runCases(GetParam(), everyShape(Collective::kBroadcast, GetParam(), Mode::kOrdinary));
}

TEST_P(DirectThreads, LargeCountsThatNoRankCountDivides) {
  const int n = GetParam();
  std::vector<Case> cases;
  uint32_t salt = 1;
  for (bool inPlace : {false, true}) {
    cases.push_back({Collective::kAllReduce, DataType::kFloat32, ReduceOp::kSum, kLarge, 0, inPlace,
                     Mode::kOrdinary, 0, salt++});
    cases.push_back({Collective::kAllReduce, DataType::kBFloat16, ReduceOp::kAvg, kLarge, 0,
                     inPlace, Mode::kOrdinary, 0, salt++});
    cases.push_back({Collective::kReduceScatter, DataType::kInt64, ReduceOp::kMax, kLarge / n, 0,
                     inPlace, Mode::kOrdinary, 0, salt++});
    cases.push_back({Collective::kAllGather, DataType::kUint8, ReduceOp::kSum, kLarge, 0, inPlace,
                     Mode::kOrdinary, 0, salt++});
    cases.push_back({Collective::kBroadcast, DataType::kFloat16, ReduceOp::kSum, kLarge, n - 1,
                     inPlace, Mode::kOrdinary, 0, salt++});
  }
  runCases(n, cases);
}

TEST_P(DirectThreads, SubBuffersAtOddElementOffsets) {
  const int n = GetParam();
  std::vector<Case> cases;
  uint32_t salt = 3;
  for (Mode mode : {Mode::kOrdinary, Mode::kRegistered}) {
    for (size_t count : {size_t{7}, size_t{1000}, kLarge / 8}) {
      for (bool inPlace : {false, true}) {
        cases.push_back({Collective::kAllReduce, DataType::kFloat64, ReduceOp::kSum, count, 0,
                         inPlace, mode, 3, salt++});
        cases.push_back({Collective::kReduceScatter, DataType::kFloat16, ReduceOp::kMin, count, 0,
                         inPlace, mode, 5, salt++});
        cases.push_back({Collective::kAllGather, DataType::kInt32, ReduceOp::kSum, count, 0,
                         inPlace, mode, 1, salt++});
        cases.push_back({Collective::kBroadcast, DataType::kInt8, ReduceOp::kSum, count, n / 2,
                         inPlace, mode, 3, salt++});
      }
    }
  }
  runCases(n, cases);
}

TEST_P(DirectThreads, RegisteredAndOrdinaryMemoryMixed) {
  const int n = GetParam();
  std::vector<Case> cases;
  uint32_t salt = 5;
  for (Mode mode :
       {Mode::kRegistered, Mode::kMixedRanks, Mode::kRegisteredIn, Mode::kRegisteredOut}) {
    for (size_t count : {size_t{1}, size_t{1000}, kLarge}) {
      for (bool inPlace : {false, true}) {
        cases.push_back({Collective::kAllReduce, DataType::kInt32, ReduceOp::kProd, count, 0,
                         inPlace, mode, 0, salt++});
        cases.push_back({Collective::kReduceScatter, DataType::kFloat32, ReduceOp::kAvg,
                         count / n + 1, 0, inPlace, mode, 0, salt++});
        cases.push_back({Collective::kAllGather, DataType::kFloat16, ReduceOp::kSum, count / n + 1,
                         0, inPlace, mode, 0, salt++});
        cases.push_back({Collective::kBroadcast, DataType::kUint64, ReduceOp::kSum, count, 0,
                         inPlace, mode, 0, salt++});
      }
    }
  }
  runCases(n, cases);
}

// Buffers freed and allocated again (often at the same address) between calls: each round's
// inputs differ, so reading an earlier round's buffer shows.
TEST_P(DirectThreads, BuffersReallocatedBetweenCalls) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (uint32_t round = 0; round < 50; ++round) {
    const Mode mode = round % 3 == 0 ? Mode::kOrdinary : Mode::kRegistered;
    cases.push_back({Collective::kAllReduce, DataType::kFloat32, ReduceOp::kSum, 30011, 0,
                     round % 2 == 1, mode, 0, round * 7});
  }
  runCases(n, cases);
}

TEST_P(DirectThreads, EveryNonEmptyCallOfTheFourCollectivesRunsDirect) {
  const int n = GetParam();
  auto calls = runTraced(n, [&](Communicator& comm) {
    uint32_t salt = 0;
    for (size_t count : {size_t{0}, size_t{1}, size_t{1000}}) {
      for (bool inPlace : {false, true}) {
        runCase(comm, {Collective::kAllReduce, DataType::kInt32, ReduceOp::kSum, count, 0, inPlace,
                       Mode::kOrdinary, 0, salt++});
        runCase(comm, {Collective::kReduceScatter, DataType::kFloat32, ReduceOp::kMax, count, 0,
                       inPlace, Mode::kRegistered, 0, salt++});
        runCase(comm, {Collective::kAllGather, DataType::kInt8, ReduceOp::kSum, count, 0, inPlace,
                       Mode::kMixedRanks, 0, salt++});
        runCase(comm, {Collective::kBroadcast, DataType::kFloat64, ReduceOp::kSum, count, n - 1,
                       inPlace, Mode::kOrdinary, 0, salt++});
      }
    }
    // Other collectives never go direct.
    std::vector<int32_t> in(9, comm.rank() + 1), out(9, 0);
    comm.reduce(in.data(), out.data(), 9, DataType::kInt32, ReduceOp::kSum, 0);
    if (comm.rank() == 0) {
      EXPECT_EQ(out[8], n * (n + 1) / 2);
    }
    comm.barrier();
  });
  expectDirect(calls, 1);
}

TEST_P(DirectThreads, GroveDirect0TurnsItOff) {
  const int n = GetParam();
  std::vector<Case> cases;
  uint32_t salt = 9;
  for (bool inPlace : {false, true}) {
    for (size_t count : {size_t{0}, size_t{7}, kLarge}) {
      cases.push_back({Collective::kAllReduce, DataType::kFloat32, ReduceOp::kSum, count, 0,
                       inPlace, Mode::kRegistered, 0, salt++});
      cases.push_back({Collective::kReduceScatter, DataType::kInt32, ReduceOp::kAvg, count / n, 0,
                       inPlace, Mode::kOrdinary, 1, salt++});
      cases.push_back({Collective::kAllGather, DataType::kUint8, ReduceOp::kSum, count, 0, inPlace,
                       Mode::kMixedRanks, 0, salt++});
      cases.push_back({Collective::kBroadcast, DataType::kBFloat16, ReduceOp::kSum, count, 0,
                       inPlace, Mode::kOrdinary, 0, salt++});
    }
  }
  auto calls = runTraced(
      n,
      [&](Communicator& comm) {
        for (const Case& c : cases) runCase(comm, c);
      },
      directAlways().set("GROVE_DIRECT", "0"));
  expectDirect(calls, UINT64_MAX);  // Nothing direct, whether or not the executor exists.
}

INSTANTIATE_TEST_SUITE_P(Ranks, DirectThreads, ::testing::Values(2, 3, 5), rankCountName);

// The default threshold: tiny calls take the normal path, calls of several MiB go direct.
TEST(DirectThreadsDefault, SmallCallsStayOnTheNormalPathLargeOnesGoDirect) {
  constexpr int kRanks = 3;
  auto calls = runTraced(
      kRanks,
      [](Communicator& comm) {
        runCase(comm, {Collective::kAllReduce, DataType::kFloat32, ReduceOp::kSum, 2, 0, false,
                       Mode::kOrdinary, 0, 1});
        runCase(comm, {Collective::kAllReduce, DataType::kFloat32, ReduceOp::kSum, kAboveDefault, 0,
                       false, Mode::kOrdinary, 0, 2});
        runCase(comm, {Collective::kBroadcast, DataType::kUint8, ReduceOp::kSum, 5, 1, true,
                       Mode::kRegistered, 0, 3});
        runCase(comm, {Collective::kBroadcast, DataType::kFloat32, ReduceOp::kSum, kAboveDefault, 1,
                       true, Mode::kRegistered, 0, 4});
      },
      Options().set("GROVE_DIRECT", "1"));
  ASSERT_EQ(calls[0].size(), 4u);
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_NE(calls[rank][0].algorithm, "direct") << "rank " << rank << ": 8-byte allReduce";
    EXPECT_EQ(calls[rank][1].algorithm, "direct") << "rank " << rank << ": 4 MiB allReduce";
    EXPECT_NE(calls[rank][2].algorithm, "direct") << "rank " << rank << ": 5-byte broadcast";
    EXPECT_EQ(calls[rank][3].algorithm, "direct") << "rank " << rank << ": 4 MiB broadcast";
  }
}

// One rank has no peer to read: the call is a copy (or nothing in place), never direct.
TEST(DirectThreadsOneRank, ValuesAreRightAndNothingRunsDirect) {
  std::vector<Case> cases;
  for (Mode mode : {Mode::kOrdinary, Mode::kRegistered}) {
    for (Collective collective : {Collective::kAllReduce, Collective::kReduceScatter,
                                  Collective::kAllGather, Collective::kBroadcast}) {
      for (bool inPlace : {false, true}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{1000}}) {
          cases.push_back(
              {collective, DataType::kInt64, ReduceOp::kAvg, count, 0, inPlace, mode, 0, 11});
        }
      }
    }
  }
  auto calls = runTraced(1, [&](Communicator& comm) {
    for (const Case& c : cases) runCase(comm, c);
  });
  expectDirect(calls, UINT64_MAX);
}

}  // namespace
}  // namespace grove::mr
