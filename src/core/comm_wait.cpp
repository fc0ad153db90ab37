// How a rank waits for its operations: poll, hand the core over when it may be needed,
// then sleep on the doorbell. The numbers come from 2- and 4-process runs on a 2-CPU host
// (docs/performance.md); each constant says what it was measured against.
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "common/log.hpp"
#include "core/comm_state.hpp"

namespace grove::detail {

using Clock = std::chrono::steady_clock;

namespace {
// How long a waiting rank polls without ever giving its core away (see waitFor).
constexpr std::chrono::microseconds kPollBeforeYielding{2};
// How long a waiting rank polls before it sleeps on its doorbell (GROVE_SPIN_US overrides
// it). A sleeping rank runs again only after a futex wake, which on a virtual machine whose
// CPUs went idle took 10-250 us; its peers, already in their next call, then give up polling
// and sleep too, and the lag passes from call to call. 2 processes, `grove perf allreduce -b
// 8 -e 256M -n 10`, 8 runs each: polling 20 us, the 32 B size (the first after the 8 B
// checks) took 2.6-5.7 us per call in 5 runs of 8; polling 200 us, at most 0.92 us; 500 us
// and 1 ms were no better.
constexpr std::chrono::microseconds kDefaultSpin{200};
// Where ranks outnumber CPUs a waiting rank hands its core over every kPollsPerYield polls: a
// peer that yields is ready to run again at once, one that sleeps needs a futex wake first.
// 4 processes on 2 CPUs, 8 B allreduce, 3 runs each: yielding every 64 polls and sleeping
// after 20 us, 9.7-17 us per call; every 8 polls and after 200 us, 2.9-6.9 us (Open MPI:
// 3-9 us).
constexpr uint32_t kPollsPerYield = 8;

// How many CPUs this host's ranks have between them, as far as this rank can tell: its own
// affinity mask, unless that is a single CPU while the host has a CPU for every rank — a
// launcher (grove run, mpirun --bind-to core) then bound each rank to a CPU of its own.
int cpusForLocalRanks(int localRanks) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int own = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return own == 1 && online >= localRanks ? localRanks : own;
}
}  // namespace

void CommState::chooseWaitPolicy() {
  const int usable = cpusForLocalRanks(transport_->ranksOnThisHost());
  yieldWhileSpinning_ = transport_->ranksOnThisHost() > usable;
  spin_ = config_.spin.count() >= 0 ? config_.spin : kDefaultSpin;
  log::info(rank_, "waiting: {} ranks on this host, {} CPUs: poll {} us{} before sleeping",
            transport_->ranksOnThisHost(), usable, spin_.count(),
            yieldWhileSpinning_ ? " (yielding between polls)" : "");
}

bool CommState::waitFor(Operation& op, std::optional<Clock::time_point> until) {
  requireQueued(op);
  transport::Doorbell& bell = transport_->doorbell();
  auto spinEnd = Clock::now() + spin_;
  uint32_t polls = 0;
  while (!op.finished()) {
    if (poll()) {
      polls = 0;
      spinEnd = Clock::now() + spin_;
      continue;
    }
    if (op.finished()) break;
    // Between cheap polls, look at the clock, peers' health and deadlines only now and then.
    if ((++polls & 63) != 0) {
      if (yieldWhileSpinning_ && polls % kPollsPerYield == 0) {
        sched_yield();
      } else {
        transport::cpuRelax();
      }
      continue;
    }
    // After the first microseconds of polling, give the core away between polls when it is
    // needed elsewhere (a peer rank or any other process may be waiting for it). Two ranks
    // on two CPUs still end up on one now and then (the scheduler wakes a rank on its
    // waker's CPU); without the yield each would poll its whole spin while the other waits
    // for the core, and every call would cost a spin plus a futex wake (27 us, not 0.5).
    auto now = Clock::now();
    if (yieldWhileSpinning_ || now >= spinEnd - spin_ + kPollBeforeYielding) {
      sched_yield();
      now = Clock::now();
    }
    if (failIfStuck(now)) break;
    if (abortRequested()) {  // Communicator::abort on another thread
      abort();
      break;
    }
    if (until && now >= *until) return false;
    if (now < spinEnd) continue;
    uint32_t sequence = transport::prepareSleep(bell);
    // (An abort requested before the sleep was announced rang no bell this sleep hears.)
    if (poll() || abortRequested()) {
      transport::cancelSleep(bell);
      spinEnd = Clock::now() + spin_;
      continue;
    }
    // From here the transport's own threads move bytes and ring the doorbell (announced
    // above, so their ring is not lost).
    transport_->handOffProgress();
    auto wake = std::min(queue_.empty() ? now : queue_.front()->deadline,
                         now + std::chrono::milliseconds(100));
    if (until) wake = std::min(wake, *until);
    transport::sleep(bell, sequence, wake - now);
    transport::cancelSleep(bell);
  }
  return true;
}

}  // namespace grove::detail
