// CANN's interface header of the advanced API's Acos: the twin's Acos is in twin_advanced.h.
#ifndef MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_ACOS_INTF_H_
#define MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_ACOS_INTF_H_

#include "kernel_operator.h"

#endif  // MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_ACOS_INTF_H_
