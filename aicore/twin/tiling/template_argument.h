// The shorter include path some CANN kernels use for the tiling-key templates.
#include "ascendc/host_api/tiling/template_argument.h"
