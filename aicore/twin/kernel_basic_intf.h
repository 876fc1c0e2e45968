// asc-devkit's newer umbrella header of the basic API (kernel_basic_intf.h), which some CANN
// kernels include instead of kernel_operator.h: the twin declares the same API in one place.
#include "kernel_operator.h"
