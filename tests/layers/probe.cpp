// Compiled as if it were a file of one layer (tests/layers/CMakeLists.txt says which layer and
// which header), to prove that the layer's include view lets it see exactly the layers below.
#include GROVE_PROBE_HEADER

int groveLayerProbe() { return 0; }
