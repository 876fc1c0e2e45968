// asc-devkit's basic-API interface header, which some CANN kernels include directly instead of
// kernel_operator.h: the twin declares the same API in one place.
#include "kernel_operator.h"
