// CANN's interface header of the advanced API's Sigmoid: the twin's Sigmoid is in twin_advanced.h.
#ifndef MS_OPS_TWIN_LIB_SIGMOID_KERNEL_OPERATOR_SIGMOID_INTF_H_
#define MS_OPS_TWIN_LIB_SIGMOID_KERNEL_OPERATOR_SIGMOID_INTF_H_

#include "kernel_operator.h"

#endif  // MS_OPS_TWIN_LIB_SIGMOID_KERNEL_OPERATOR_SIGMOID_INTF_H_
