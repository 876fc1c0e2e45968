"""Gradient wiring of the fused linear + cross-entropy.

The forward is two kernels with the tensor-parallel collectives between them, so its backward
belongs to the whole chain, not to either kernel: :class:`FusedLinearCrossEntropyFunction`
is a Cell whose ``construct`` runs kernel 1, the collectives and kernel 2, and whose ``bprop``
runs the gradient kernel (Megatron's ``_VocabParallelCrossEntropy`` as one autograd function).
The input and weight arrive as Cell inputs, so their gradients reach Parameters of the caller.

Forward (per token r, over the group's whole vocabulary; z = x W^T on each rank's shard):
    M = allreduce_max(max_j z)          (all-gather + max on CPU)          S = allreduce_sum(sum_j exp(z_j - M))
    P = allreduce_sum(z_t - M on the rank owning t)    Z = allreduce_sum(sum_j z_j)
    loss = ln S - (1 - a) P - a (Z / V - M)
Backward (kernel fused_linear_cross_entropy_loss_grad, local to each rank):
    dz = g (softmax(z) - (1 - a) onehot(t) - a / V),   dx = allreduce_sum(dz W),   dW = dz^T x

The per-token losses then go through kernel cross_entropy_loss_reduce (ignored tokens out, and the
"mean"/"sum"/"none" reduction), whose gradient kernel cross_entropy_loss_reduce_grad gives the g
above (0 for ignored tokens). Both are kernels rather than MindSpore ops so that every N works
alike, N = 0 included: MindSpore's CPU reductions skip an empty input with a warning and leave
their output unwritten, and its elementwise ops warn on empty tensors.

Grad-in-forward (:class:`GradInForwardFunction`, a scalar loss only): the forward computes the
gradients of sum_r loss_r over the tokens that count (g = 1 for them, 0 for ignored ones) while
the logits are at hand, and reduces the losses; the backward only scales those gradients by
d loss (and 1 / count for "mean") with kernel cross_entropy_grad_scale, in place: a scaled copy
would double the gradients' memory at the backward's peak. The backward returns the stored
tensors, ordered after the kernel by Depend; they are no forward output the caller sees.
"""
import mindspore as ms
from mindspore import ops
from mindspore.communication import get_group_size
from mindspore.ops import ReduceOp

from ms_ops._custom import custom_op
from ms_ops._graph import RecoveringCell
from ms_ops.kernels.cross_entropy import (CROSS_ENTROPY_GRAD_SCALE, CROSS_ENTROPY_LOSS_REDUCE,
                                          CROSS_ENTROPY_LOSS_REDUCE_GRAD,
                                          FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM,
                                          FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD,
                                          FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD,
                                          FUSED_LINEAR_ONLINE_MAX_SUM)

API = "fused_linear_cross_entropy"


def make_cross_entropy_loss_reduce_bprop(*, ignore_index, reduction):
    """d loss[r] = d out (through the reduction) for the tokens that count, 0 for ignored ones."""
    grad_op = custom_op(CROSS_ENTROPY_LOSS_REDUCE_GRAD, api=API, ignore_index=ignore_index,
                        reduction=reduction)

    def bprop(loss, target, out, dout):
        return grad_op(dout[0], target, out[1]), ops.zeros_like(target)

    return bprop


class _VocabParallel(RecoveringCell):
    """The kernels of one vocabulary shard and, with ``group``, the collectives that combine the
    shards' partial statistics."""

    def __init__(self, vocab_start_index, vocab_end_index, vocab_size, ignore_index,
                 label_smoothing, high_performance, group):
        super().__init__()
        self.vocab_start_index = vocab_start_index
        self.vocab_end_index = vocab_end_index
        self.high_performance = high_performance
        self.distributed = group is not None
        self.max_sum_op = custom_op(FUSED_LINEAR_ONLINE_MAX_SUM, api=API, vocab_start_index=vocab_start_index,
                                    vocab_end_index=vocab_end_index, return_logits=high_performance,
                                    vocab_size=vocab_size, ignore_index=ignore_index)
        self.loss_op = custom_op(FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM, api=API, label_smoothing=label_smoothing,
                                 vocab_size=vocab_size, has_logits=high_performance)
        self.grad_op = custom_op(FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD, api=API, label_smoothing=label_smoothing,
                                 vocab_size=vocab_size, has_softmax=high_performance)
        if self.distributed:
            self.ranks = get_group_size(group)
            # MindSpore's CPU AllReduce only sums ("AllReduce only support reduce sum on CPU"):
            # there the row maxima are all-gathered and reduced locally.
            self.gather_max = ms.get_context("device_target") == "CPU"
            self.all_max = ops.AllGather(group) if self.gather_max else ops.AllReduce(ReduceOp.MAX, group)
            self.all_sum = ops.AllReduce(ReduceOp.SUM, group)

    def _combine(self, target, logits_max, sum_exp, predicted, sum_logits):
        """The group's M, S, P and Z from this rank's partials (unchanged without a group)."""
        if not self.distributed:
            return logits_max, sum_exp, predicted, sum_logits
        global_max = self.all_max(logits_max)
        if self.gather_max:
            global_max = global_max.reshape(self.ranks, -1).max(axis=0)
        # Each rank's partial sums move from its local max to the global one; the target logit
        # moves only on the rank that owns it (elsewhere it is 0). One SUM collective for all.
        shift = logits_max - global_max
        owned = ops.logical_and(target >= self.vocab_start_index,
                                target < self.vocab_end_index).astype(ms.float32)
        sums = self.all_sum(ops.stack((sum_exp * ops.exp(shift), predicted + shift * owned, sum_logits)))
        return global_max, sums[0], sums[1], sums[2]


class FusedLinearCrossEntropyFunction(_VocabParallel):
    """``(input [N, H], weight [V_local, H], target [N]) -> (loss [N] f32, saved...)``.

    ``loss`` is that of every token, ignored ones included (the reduction drops them; its gradient
    is 0 for them). Outputs after the first are what the backward needs (logits_max,
    sum_exp_logits, target_mask, masked_target, softmax); callers use only ``loss``.
    """

    def _placeholder_or(self, t):
        """The [1] stand-in for an absent optional kernel input (never read)."""
        if self.high_performance:
            return t
        return ops.zeros((1,), ms.float32)

    def construct(self, input, weight, target):
        logits_max, sum_exp, predicted, target_mask, masked_target, logits, sum_logits = \
            self.max_sum_op(input, weight, target)
        logits_max, sum_exp, predicted, sum_logits = self._combine(target, logits_max, sum_exp, predicted,
                                                                   sum_logits)
        loss, softmax = self.loss_op(logits_max, sum_exp, predicted, sum_logits, self._placeholder_or(logits))
        return loss, logits_max, sum_exp, target_mask, masked_target, softmax

    def bprop(self, input, weight, target, out, dout):
        d_input, d_weight = self.grad_op(dout[0], input, weight, out[3], out[4], out[1], out[2],
                                         self._placeholder_or(out[5]))
        if self.distributed:
            # Every rank's shard contributes to the gradient of the replicated input.
            d_input = self.all_sum(d_input)
        return d_input, d_weight, ops.zeros_like(target)


class GradInForwardFunction(_VocabParallel):
    """``(input [N, H], weight [V_local, H], target [N]) -> (loss [1], count [1], input_grad,
    weight_grad)`` for reduction "mean" or "sum".

    The forward computes the reduced loss and the gradients of sum_r loss_r over the ``count``
    tokens that count; the backward scales them. Without a group one kernel does it all
    (fused_linear_cross_entropy_grad_in_forward, its token blocks inside). With a group, the
    token blocks ``block_bounds`` (row ranges; empty: all rows at once) each go through the trio
    in high-performance form and the collectives; the weight gradient accumulates over the blocks
    (in float32) and the input gradient is summed over the group once.
    """

    def __init__(self, vocab_start_index, vocab_end_index, vocab_size, ignore_index, label_smoothing,
                 reduction, group, block_bytes, block_bounds):
        super().__init__(vocab_start_index, vocab_end_index, vocab_size, ignore_index, label_smoothing,
                         True, group)
        self.block_bounds = block_bounds
        self.loss_grads_op = custom_op(FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD, api=API,
                                       ignore_index=ignore_index, label_smoothing=label_smoothing,
                                       block_bytes=block_bytes)
        self.reduce_op = custom_op(CROSS_ENTROPY_LOSS_REDUCE, api=API, ignore_index=ignore_index,
                                   reduction=reduction)
        # g of the block gradients: 1 for the tokens that count, 0 for ignored ones (the
        # reduction gradient of "sum" with d out = 1; count is not read for "sum").
        self.kept_op = custom_op(CROSS_ENTROPY_LOSS_REDUCE_GRAD, api=API, ignore_index=ignore_index,
                                 reduction="sum")
        self.one = ms.Tensor([1.0], ms.float32)
        self.scale_op = custom_op(CROSS_ENTROPY_GRAD_SCALE, api=API, reduction=reduction)

    def _block(self, input, weight, target):
        """loss, this rank's input gradient and weight gradient of one token block."""
        logits_max, sum_exp, predicted, target_mask, masked_target, logits, sum_logits = \
            self.max_sum_op(input, weight, target)
        logits_max, sum_exp, predicted, sum_logits = self._combine(target, logits_max, sum_exp, predicted,
                                                                   sum_logits)
        loss, softmax = self.loss_op(logits_max, sum_exp, predicted, sum_logits, logits)
        kept = self.kept_op(self.one, target, self.one)
        d_input, d_weight = self.grad_op(kept, input, weight, target_mask, masked_target, logits_max, sum_exp,
                                         softmax)
        return loss, d_input, d_weight

    def _blocks(self, input, weight, target):
        if not self.block_bounds:
            loss, d_input, d_weight = self._block(input, weight, target)
            return loss, self.all_sum(d_input), d_weight
        r0, r1 = self.block_bounds[0]
        loss, d_input, d_weight = self._block(input[r0:r1], weight, target[r0:r1])
        losses, d_inputs, d_weight = (loss,), (d_input,), d_weight.astype(ms.float32)
        for r0, r1 in self.block_bounds[1:]:
            loss, d_input, part = self._block(input[r0:r1], weight, target[r0:r1])
            losses += (loss,)
            d_inputs += (d_input,)
            d_weight = d_weight + part.astype(ms.float32)
        return ops.concat(losses), self.all_sum(ops.concat(d_inputs)), d_weight.astype(weight.dtype)

    def construct(self, input, weight, target):
        if self.distributed:
            loss, d_input, d_weight = self._blocks(input, weight, target)
        else:
            loss, d_input, d_weight = self.loss_grads_op(input, weight, target)
        out, count = self.reduce_op(loss, target)
        return out, count, d_input, d_weight

    def bprop(self, input, weight, target, out, dout):
        applied = self.scale_op(out[2], out[3], dout[0], out[1])
        return ops.depend(out[2], applied), ops.depend(out[3], applied), ops.zeros_like(target)
