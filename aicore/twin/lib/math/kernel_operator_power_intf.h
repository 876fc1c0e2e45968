// CANN's interface header of the advanced API's Power: the twin's Power is in twin_advanced.h.
#ifndef MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_POWER_INTF_H_
#define MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_POWER_INTF_H_

#include "kernel_operator.h"

#endif  // MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_POWER_INTF_H_
