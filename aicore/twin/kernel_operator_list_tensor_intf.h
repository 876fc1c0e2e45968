// CANN's interface header of ListTensorDesc / TensorDesc: the twin's are in twin_list_tensor.h.
#ifndef MS_OPS_TWIN_KERNEL_OPERATOR_LIST_TENSOR_INTF_H_
#define MS_OPS_TWIN_KERNEL_OPERATOR_LIST_TENSOR_INTF_H_

#include "kernel_operator.h"

#endif  // MS_OPS_TWIN_KERNEL_OPERATOR_LIST_TENSOR_INTF_H_
