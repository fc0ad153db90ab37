// Public face of the byte-plane split and merge: picks the instruction-set variant once per
// process (the best one the CPU runs) and forwards each call to it, one indirect call per
// block. Arguments are the codec's own, so they are checked with assertions only.
#include "codec/planes.hpp"

#include <cassert>
#include <string>

#include "codec/planes_variants.hpp"
#include "grove/error.hpp"

namespace grove::codec {
namespace {

struct Variant {
  variants::SplitFn split;
  variants::MergeFn merge;
  const char* name;
};

const Variant* variantFor(PlanesIsa isa) {
  static const Variant kPortable{variants::splitPortable, variants::mergePortable, "portable"};
#if GROVE_PLANES_X86_VARIANTS
  static const Variant kAvx2{variants::splitAvx2, variants::mergeAvx2, "avx2"};
  static const Variant kAvx512{variants::splitAvx512, variants::mergeAvx512, "avx512"};
  switch (isa) {
    case PlanesIsa::kAvx512:
      return __builtin_cpu_supports("x86-64-v4") ? &kAvx512 : nullptr;
    case PlanesIsa::kAvx2:
      return __builtin_cpu_supports("x86-64-v3") ? &kAvx2 : nullptr;
    case PlanesIsa::kPortable:
      return &kPortable;
  }
  return nullptr;
#else
  return isa == PlanesIsa::kPortable ? &kPortable : nullptr;
#endif
}

const Variant& bestVariant() {
  static const Variant* const best = [] {
    for (PlanesIsa isa : {PlanesIsa::kAvx512, PlanesIsa::kAvx2}) {
      if (const Variant* v = variantFor(isa)) return v;
    }
    return variantFor(PlanesIsa::kPortable);
  }();
  return *best;
}

const Variant& checkedVariant(PlanesIsa isa) {
  const Variant* v = variantFor(isa);
  if (v == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "planes isa " + std::to_string(static_cast<int>(isa)) +
                    " is not supported by this build or CPU; expected one for which "
                    "planesIsaSupported() is true");
  }
  return *v;
}

}  // namespace

void splitPlanes(DataType type, const void* input, size_t count, uint8_t* const* planes) {
  assert(planeCount(type) > 0);
  bestVariant().split(type, input, count, planes);
}

void mergePlanes(DataType type, const uint8_t* const* planes, size_t count, void* output) {
  assert(planeCount(type) > 0);
  bestVariant().merge(type, planes, count, output);
}

const char* planesIsa() { return bestVariant().name; }

bool planesIsaSupported(PlanesIsa isa) { return variantFor(isa) != nullptr; }

void splitPlanesWithIsa(PlanesIsa isa, DataType type, const void* input, size_t count,
                        uint8_t* const* planes) {
  assert(planeCount(type) > 0);
  checkedVariant(isa).split(type, input, count, planes);
}

void mergePlanesWithIsa(PlanesIsa isa, DataType type, const uint8_t* const* planes, size_t count,
                        void* output) {
  assert(planeCount(type) > 0);
  checkedVariant(isa).merge(type, planes, count, output);
}

}  // namespace grove::codec
