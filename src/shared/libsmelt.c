/* The shared library's own translation unit: libsmelt.so is libsmelt.a
 * linked whole (CMakeLists.txt); it adds no code of its own. */
#include "smelt.h"
