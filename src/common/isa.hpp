// The instruction-set variants grove's vector kernels are compiled in (the reduction kernels
// of exec/reduce*, the codec's byte planes of codec/planes*), and which of them this build has
// and this CPU runs. Each kernel family writes its loops once and compiles them once per
// variant, each file under its own `#pragma GCC target`; this header is the one place that
// says which variants exist and picks among them, so the families dispatch alike.
#pragma once

#include <array>
#include <cstddef>

// The x86 variants need GCC's `#pragma GCC target` (clang, which builds the fuzzers, and
// other CPUs get the portable variant only).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GROVE_X86_VARIANTS 1
#else
#define GROVE_X86_VARIANTS 0
#endif

namespace grove::common {

/// An instruction-set variant. All variants of a kernel give bit-identical results.
enum class Isa : int {
  kPortable = 0,  ///< Baseline vector code (SSE2 on x86-64); runs everywhere.
  kAvx2 = 1,      ///< x86-64-v3: AVX2, FMA, F16C.
  kAvx512 = 2,    ///< x86-64-v4: AVX-512 F/BW/DQ/VL.
};
inline constexpr size_t kIsaCount = 3;
/// Every Isa, the portable one first (the order tests walk them in).
inline constexpr std::array<Isa, kIsaCount> kIsas = {Isa::kPortable, Isa::kAvx2, Isa::kAvx512};

/// "portable", "avx2", "avx512".
const char* toString(Isa isa);

/// Whether this build compiles the variant (GROVE_X86_VARIANTS) and this CPU and operating
/// system run it.
bool isaRuns(Isa isa);

/// Throws grove::Error (kInvalidArgument): `what` cannot run on `isa` in this build or CPU.
[[noreturn]] void throwIsaNotRunning(Isa isa, const char* what);

/// A kernel family's variants, one per Isa (nullptr where the build has none), and the one
/// a call uses.
template <class Variant>
class IsaVariants {
 public:
  explicit constexpr IsaVariants(std::array<const Variant*, kIsaCount> byIsa) : byIsa_(byIsa) {}

  /// The variant of `isa` when this build has it and this CPU runs it, else nullptr.
  const Variant* find(Isa isa) const {
    const Variant* variant = byIsa_[static_cast<size_t>(isa)];
    return variant != nullptr && isaRuns(isa) ? variant : nullptr;
  }

  /// The variant of `isa` (tests and benchmarks choose one); throws, naming `what`, when it
  /// does not run here.
  const Variant& require(Isa isa, const char* what) const {
    if (const Variant* variant = find(isa)) return *variant;
    throwIsaNotRunning(isa, what);
  }

  /// The widest variant that runs here (the portable one at worst; the family must have
  /// it). Callers keep its variant in a static: decided once per process, dispatch is then
  /// one indirect call per buffer.
  Isa bestIsa() const {
    for (size_t i = kIsaCount; i-- > 1;) {
      if (find(static_cast<Isa>(i)) != nullptr) return static_cast<Isa>(i);
    }
    return Isa::kPortable;
  }
  const Variant& best() const { return *byIsa_[static_cast<size_t>(bestIsa())]; }

 private:
  std::array<const Variant*, kIsaCount> byIsa_;
};

}  // namespace grove::common
