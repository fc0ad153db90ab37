// Public face of the byte-plane split and merge: picks the instruction-set variant once per
// process (the best one the CPU runs) and forwards each call to it, one indirect call per
// block. Arguments are the codec's own: a type without planes is a bug
// (GROVE_ENFORCE), anything else the caller (codec.cpp) has checked.
#include "codec/planes.hpp"

#include "codec/planes_variants.hpp"
#include "common/enforce.hpp"

namespace grove::codec {
namespace {

struct Variant {
  variants::SplitFn split;
  variants::MergeFn merge;
};

constexpr Variant kPortable{variants::splitPortable, variants::mergePortable};
#if GROVE_X86_VARIANTS
constexpr Variant kAvx2{variants::splitAvx2, variants::mergeAvx2};
constexpr Variant kAvx512{variants::splitAvx512, variants::mergeAvx512};
constexpr common::IsaVariants<Variant> kVariants({&kPortable, &kAvx2, &kAvx512});
#else
constexpr common::IsaVariants<Variant> kVariants({&kPortable, nullptr, nullptr});
#endif

const Variant& bestVariant() {
  static const Variant& best = kVariants.best();
  return best;
}

}  // namespace

void splitPlanes(DataType type, const void* input, size_t count, uint8_t* const* planes) {
  GROVE_ENFORCE_GT(planeCount(type), 0, "byte planes of a type without planes");
  bestVariant().split(type, input, count, planes);
}

void mergePlanes(DataType type, const uint8_t* const* planes, size_t count, void* output) {
  GROVE_ENFORCE_GT(planeCount(type), 0, "byte planes of a type without planes");
  bestVariant().merge(type, planes, count, output);
}

common::Isa planesIsa() {
  static const common::Isa best = kVariants.bestIsa();
  return best;
}

void splitPlanesWithIsa(common::Isa isa, DataType type, const void* input, size_t count,
                        uint8_t* const* planes) {
  GROVE_ENFORCE_GT(planeCount(type), 0, "byte planes of a type without planes");
  kVariants.require(isa, "splitPlanesWithIsa").split(type, input, count, planes);
}

void mergePlanesWithIsa(common::Isa isa, DataType type, const uint8_t* const* planes, size_t count,
                        void* output) {
  GROVE_ENFORCE_GT(planeCount(type), 0, "byte planes of a type without planes");
  kVariants.require(isa, "mergePlanesWithIsa").merge(type, planes, count, output);
}

}  // namespace grove::codec
