// process_check, the rest of the API: allToAllv with irregular counts and gaps, send/recv rings
// inside groups (and plain pairwise send/recv), barriers, asynchronous calls in flight
// together, and split: odd and even ranks in two children (keys reversing the order), the
// parent and a child used one after the other and then at the same time from two threads, and
// a color of -1.
//
// Why across processes: these are the calls whose correctness depends on matching — which
// message belongs to which call, to which communicator, to which peer — and in a process job
// every communicator (also a split one) has segments and store keys of its own; a message
// taken by the wrong communicator or the wrong peer shows here as a wrong byte or a hang.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "check_support.hpp"

namespace grove::proc {
namespace {

size_t amount(int p, int q, size_t scale) {
  if ((p * 3 + q * 5) % 4 == 1) return 0;
  return static_cast<size_t>(p + 2 * q + 1) * scale + static_cast<size_t>((p * q) % 3);
}

struct Layout {
  std::vector<size_t> counts, displs;
  size_t total = 0;
};

// Blocks in peer order (or reversed), with (q % 3) elements of gap before block q.
Layout layout(std::vector<size_t> counts, bool reversed) {
  const int n = static_cast<int>(counts.size());
  Layout l{std::move(counts), std::vector<size_t>(n), 0};
  for (int i = 0; i < n; ++i) {
    const int q = reversed ? n - 1 - i : i;
    l.total += static_cast<size_t>(q % 3);
    l.displs[q] = l.total;
    l.total += l.counts[q];
  }
  return l;
}

Layout sendLayout(int p, int n, size_t scale, bool reversed) {
  std::vector<size_t> counts(n);
  for (int q = 0; q < n; ++q) counts[q] = amount(p, q, scale);
  return layout(std::move(counts), reversed);
}

void checkAllToAllv(Communicator& comm, Checker& check, DataType type, size_t scale, bool reversed,
                    int salt) {
  const int n = comm.size();
  const int me = comm.rank();
  const size_t esize = dataTypeSize(type);
  check.step = "allToAllv " + std::string(toString(type)) + " scale " + std::to_string(scale) +
               (reversed ? " reversed" : "");
  const Layout mine = sendLayout(me, n, scale, reversed);
  std::vector<size_t> recvCounts(n);
  for (int q = 0; q < n; ++q) recvCounts[q] = amount(q, me, scale);
  const Layout recvLayout = layout(recvCounts, reversed);
  GuardedBuffer send(mine.total * esize);
  const std::vector<uint8_t> input = pattern(me, 0, send.size(), salt);
  std::copy(input.begin(), input.end(), send.data());
  GuardedBuffer recv(recvLayout.total * esize);
  comm.allToAllv(send.data(), mine.counts, mine.displs, recv.data(), recvLayout.counts,
                 recvLayout.displs, type);
  std::vector<uint8_t> want(recv.size(), kPoison);
  for (int q = 0; q < n; ++q) {
    const Layout theirs = sendLayout(q, n, scale, reversed);
    const std::vector<uint8_t> block =
        pattern(q, theirs.displs[me] * esize, recvCounts[q] * esize, salt);
    std::copy(block.begin(), block.end(), want.begin() + recvLayout.displs[q] * esize);
  }
  check.bytes(check.step, recv.data(), want.data(), want.size());
  check.bytes(check.step + ": send buffer", send.data(), input.data(), input.size());
  send.checkGuards(check, check.step);
  recv.checkGuards(check, check.step);
}

// Inside a group every rank sends to both neighbours and receives from both.
void checkRing(Communicator& comm, Checker& check, DataType type, size_t count, int salt) {
  const int n = comm.size();
  const int me = comm.rank();
  const int next = (me + 1) % n;
  const int prev = (me + n - 1) % n;
  const size_t bytes = count * dataTypeSize(type);
  check.step = "send/recv ring in a group, " + std::string(toString(type)) + " count " +
               std::to_string(count);
  // The data sent to the right uses salt, to the left salt + 1, so a swap shows.
  GuardedBuffer toNext(bytes), toPrev(bytes), fromPrev(bytes), fromNext(bytes);
  const std::vector<uint8_t> right = pattern(me, 0, bytes, salt);
  const std::vector<uint8_t> left = pattern(me, 0, bytes, salt + 1);
  std::copy(right.begin(), right.end(), toNext.data());
  std::copy(left.begin(), left.end(), toPrev.data());
  comm.groupStart();
  comm.send(toNext.data(), count, type, next);
  comm.recv(fromPrev.data(), count, type, prev);
  comm.send(toPrev.data(), count, type, prev);
  comm.recv(fromNext.data(), count, type, next);
  comm.groupEnd();
  check.bytes(check.step + ": from the left", fromPrev.data(), pattern(prev, 0, bytes, salt).data(),
              bytes);
  check.bytes(check.step + ": from the right", fromNext.data(),
              pattern(next, 0, bytes, salt + 1).data(), bytes);
  for (const GuardedBuffer* b : {&toNext, &toPrev, &fromPrev, &fromNext}) {
    b->checkGuards(check, check.step);
  }
}

// Outside a group: pairs (0, 1), (2, 3), ...; the even rank sends first, then receives.
void checkPairs(Communicator& comm, Checker& check, size_t count, int salt) {
  const int me = comm.rank();
  const int partner = me % 2 == 0 ? me + 1 : me - 1;
  if (partner >= comm.size()) return;
  check.step = "send/recv pairs, count " + std::to_string(count);
  const std::vector<uint8_t> out = pattern(me, 0, count * 4, salt);
  std::vector<uint8_t> in(count * 4, kPoison);
  if (me % 2 == 0) {
    comm.send(out.data(), count, DataType::kInt32, partner);
    comm.recv(in.data(), count, DataType::kInt32, partner);
  } else {
    comm.recv(in.data(), count, DataType::kInt32, partner);
    comm.send(out.data(), count, DataType::kInt32, partner);
  }
  check.bytes(check.step, in.data(), pattern(partner, 0, count * 4, salt).data(), in.size());
}

void checkAsync(Communicator& comm, Checker& check, int salt) {
  check.step = "async allReduce + broadcast + barrier in flight together";
  constexpr size_t kCount = 4099;
  const std::vector<uint8_t> in =
      reductionInput(comm.rank(), kCount, DataType::kInt32, ReduceOp::kSum, salt);
  std::vector<uint8_t> sum(in.size(), kPoison);
  const std::vector<uint8_t> root = pattern(0, 0, kCount, salt);
  std::vector<uint8_t> bcast = comm.rank() == 0 ? root : std::vector<uint8_t>(kCount, kPoison);
  Request a = comm.allReduceAsync(in.data(), sum.data(), kCount, DataType::kInt32, ReduceOp::kSum);
  Request b = comm.broadcastAsync(bcast.data(), bcast.data(), kCount, DataType::kUint8, 0);
  Request c = comm.barrierAsync();
  c.wait();
  b.wait();
  a.wait();
  check.bytes(check.step + ": allReduce", sum.data(),
              reductionExpected(comm.size(), kCount, DataType::kInt32, ReduceOp::kSum, salt).data(),
              sum.size());
  check.bytes(check.step + ": broadcast", bcast.data(), root.data(), kCount);
}

// allReduce of int64 (old rank + 1) and allGather of old ranks on `comm`; `members` are the
// old ranks of `comm` in its rank order.
void checkMembers(Communicator& comm, Checker& check, const std::vector<int>& members, int oldRank,
                  const std::string& what) {
  check.equal(what + ": size", comm.size(), static_cast<long long>(members.size()));
  const long long position = std::find(members.begin(), members.end(), oldRank) - members.begin();
  check.equal(what + ": rank", comm.rank(), position);
  std::vector<int32_t> gathered(members.size(), -1);
  const int32_t mine = oldRank;
  comm.allGather(&mine, gathered.data(), 1, DataType::kInt32);
  for (size_t i = 0; i < members.size(); ++i) {
    check.equal(what + ": member " + std::to_string(i), gathered[i], members[i]);
  }
  int64_t value = oldRank + 1, sum = 0, want = 0;
  for (int m : members) want += m + 1;
  comm.allReduce(&value, &sum, 1, DataType::kInt64, ReduceOp::kSum);
  check.equal(what + ": allReduce", sum, want);
}

// `rounds` allReduces of float32 on `comm`, checked; run from a thread of its own.
void repeatedAllReduce(Communicator& comm, Checker& check, int rounds, int salt) {
  constexpr size_t kCount = 2053;
  for (int i = 0; i < rounds; ++i) {
    const std::vector<uint8_t> in =
        reductionInput(comm.rank(), kCount, DataType::kFloat32, ReduceOp::kSum, salt + i);
    std::vector<uint8_t> out(in.size(), kPoison);
    comm.allReduce(in.data(), out.data(), kCount, DataType::kFloat32, ReduceOp::kSum);
    const std::vector<uint8_t> want =
        reductionExpected(comm.size(), kCount, DataType::kFloat32, ReduceOp::kSum, salt + i);
    check.bytes("concurrent allReduce " + std::to_string(i), out.data(), want.data(), out.size());
  }
}

void checkSplit(Communicator& comm, Checker& check, int salt) {
  const int n = comm.size();
  const int me = comm.rank();
  check.step = "split odd/even";
  Communicator child = comm.split(me % 2, n - me);  // keys reverse the order
  std::vector<int> members;
  for (int r = n - 1; r >= 0; --r) {
    if (r % 2 == me % 2) members.push_back(r);
  }
  check.equal("split odd/even: valid", child.valid(), 1);
  check.step = "split odd/even: child collectives";
  checkMembers(child, check, members, me, "split odd/even child");
  std::vector<int> everyone(n);
  for (int r = 0; r < n; ++r) everyone[r] = r;
  check.step = "split odd/even: parent after the split";
  checkMembers(comm, check, everyone, me, "parent after split");
  check.step = "split odd/even: child again";
  checkMembers(child, check, members, me, "split odd/even child again");

  // Both at the same time: the child from a second thread, the parent from this one.
  check.step = "split odd/even: parent and child at the same time";
  Checker childCheck(me);
  std::exception_ptr childError;
  std::thread worker([&] {
    try {
      repeatedAllReduce(child, childCheck, 10, salt);
    } catch (...) {
      childError = std::current_exception();
      child.abort();
    }
  });
  try {
    repeatedAllReduce(comm, check, 10, salt + 100);
  } catch (...) {
    worker.join();
    throw;
  }
  worker.join();
  if (childError) std::rethrow_exception(childError);
  if (!childCheck.ok()) check.fail("child thread: " + childCheck.firstFailure());

  // Color -1 opts rank 0 out; the others form one communicator.
  check.step = "split with color -1 on rank 0";
  Communicator rest = comm.split(me == 0 ? -1 : 3, 0);
  check.equal("split color -1: valid", rest.valid(), me == 0 ? 0 : 1);
  if (rest.valid()) {
    std::vector<int> others;
    for (int r = 1; r < n; ++r) others.push_back(r);
    checkMembers(rest, check, others, me, "split without rank 0");
    rest.barrier();
  }
}

}  // namespace

void checkGroups(Communicator& comm, Checker& check) {
  int salt = 7;
  for (DataType type : {DataType::kInt32, DataType::kInt8}) {
    for (size_t scale : {size_t{1}, size_t{100}, size_t{20000}}) {
      for (bool reversed : {false, true})
        checkAllToAllv(comm, check, type, scale, reversed, salt++);
    }
  }
  for (size_t count : {size_t{0}, size_t{1}, size_t{1031}, size_t{300007}}) {
    checkRing(comm, check, DataType::kInt32, count, salt);
    salt += 2;
    checkPairs(comm, check, count, salt++);
  }
  for (int i = 0; i < 3; ++i) {
    check.step = "barrier " + std::to_string(i);
    comm.barrier();
  }
  checkAsync(comm, check, salt++);
  checkSplit(comm, check, salt);
}

}  // namespace grove::proc
