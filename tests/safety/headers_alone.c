/* Compiled against the source tree's include/ alone (safety.headers_alone_*): the public
 * headers must need no generated file and no build directory. */
#include "grove/grove.h"

int main(void) { return GROVE_VERSION_CODE > 0 ? 0 : 1; }
