// Tiling of cross_entropy_loss_reduce_grad: ComputeCrossEntropyLossReduceTiling, shared with the
// forward (one block, the tokens in chunks, also for N = 0; the kernels' UB fits CelrUbBytes).
#ifndef MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_TILING_H_
#define MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_TILING_H_

#include "../../cross_entropy_loss_reduce/op_host/cross_entropy_loss_reduce_tiling.h"
#include "../op_kernel/cross_entropy_loss_reduce_grad_tiling_data.h"

#endif  // MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_GRAD_TILING_H_
