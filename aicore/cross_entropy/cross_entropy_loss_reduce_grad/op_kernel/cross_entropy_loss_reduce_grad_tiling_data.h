// Tiling of cross_entropy_loss_reduce_grad: that of its forward, which walks the tokens alike.
#ifndef MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_TILING_DATA_H_
#define MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_TILING_DATA_H_

#include "../../cross_entropy_loss_reduce/op_kernel/cross_entropy_loss_reduce_tiling_data.h"

#endif  // MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_TILING_DATA_H_
