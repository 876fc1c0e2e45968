// CANN's interface header of the advanced API's Erf: the twin's Erf is in twin_advanced.h.
#ifndef MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_ERF_INTF_H_
#define MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_ERF_INTF_H_

#include "kernel_operator.h"

#endif  // MS_OPS_TWIN_LIB_MATH_KERNEL_OPERATOR_ERF_INTF_H_
