"""Language-model head + loss built on the fused linear cross-entropy kernels."""
import mindspore as ms
from mindspore import Parameter
from mindspore.common.initializer import Normal, initializer

from ms_ops._graph import RecoveringCell
from ms_ops.ops._validation import check_choice, check_dim, check_int, check_rank, check_same_dtype
from ms_ops.ops.cross_entropy import MODES, REDUCTIONS, check_group, fused_linear_cross_entropy


class FusedLinearCrossEntropyLoss(RecoveringCell):
    r"""The output projection of a language model fused with its cross-entropy loss.

    Holds the classifier ``weight [V_local, H]`` and computes
    :func:`ms_ops.fused_linear_cross_entropy` ``(hidden, weight, target)`` without the
    ``[N, V]`` logits (at most a token block of them in ``"grad_in_forward"`` mode, none in
    ``"memory_saving"`` mode).

    Vocabulary parallel: with ``group``, the vocabulary of ``vocab_size`` ids is split in equal
    shards over the group's ranks in rank order; this rank holds ``vocab_size / group size``
    rows. Every rank gets the full loss and input gradient.

    Args:
        hidden_size (int): H.
        vocab_size (int): V, the whole vocabulary.

    Keyword Args:
        ignore_index (int): target value skipped by the loss. Default -100.
        reduction (str): ``"mean"`` (over non-ignored tokens), ``"sum"`` or ``"none"``.
            Default ``"mean"``.
        label_smoothing (float): in ``[0, 1)``. Default 0.
        group (str, optional): tensor-parallel communication group. Default None.
        mode (str): ``"auto"``, ``"grad_in_forward"``, ``"memory_saving"`` or
            ``"high_performance"`` (see :func:`ms_ops.fused_linear_cross_entropy`). Default
            ``"auto"``: grad_in_forward when training with a scalar loss, memory_saving
            otherwise; in GRAPH mode a compiled scalar loss takes grad_in_forward, so an
            inference-only Cell there should pass ``mode="memory_saving"``.
        block_bytes (int, optional): grad_in_forward's budget of one token block's float32
            logits. Default ``ms_ops.ops.cross_entropy.default_block_bytes``: ``V * min(H - 512, 2048)``
            bytes, at least 16 MiB.
        weight_init: initializer of the weight. Default ``Normal(0.02)``.
        dtype (mindspore.dtype): weight dtype (float32/float16/bfloat16); the hidden states must
            have it too. Default float32.

    Inputs:
        hidden (Tensor): ``[N, H]`` with ``H = hidden_size``, in the weight's dtype.
        target (Tensor): ``[N]`` int32/int64.

    Outputs:
        Tensor, float32: scalar loss, or ``[N]`` with ``reduction="none"``.
    """

    def __init__(self, hidden_size, vocab_size, *, ignore_index=-100, reduction="mean",
                 label_smoothing=0.0, group=None, mode="auto", block_bytes=None, weight_init=None,
                 dtype=ms.float32):
        super().__init__()
        name = "FusedLinearCrossEntropyLoss"
        for arg, value in (("hidden_size", hidden_size), ("vocab_size", vocab_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: '{arg}' must be a positive int, got {value!r}")
        check_choice(name, "reduction", reduction, REDUCTIONS)
        check_choice(name, "mode", mode, MODES)
        if block_bytes is not None:
            check_int(name, "block_bytes", block_bytes, low=1)
        shards = 1
        if group is not None:
            from mindspore.communication import get_group_size
            check_group(name, group)
            shards = get_group_size(group)
            if vocab_size % shards:
                raise ValueError(f"{name}: 'vocab_size' ({vocab_size}) must divide evenly over the "
                                 f"{shards} ranks of group {group!r}")
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing
        self.group = group
        self.mode = mode
        self.block_bytes = block_bytes
        init = Normal(0.02) if weight_init is None else weight_init
        self.weight = Parameter(initializer(init, (vocab_size // shards, hidden_size), dtype),
                                name="weight")

    def construct(self, hidden, target):
        name = "FusedLinearCrossEntropyLoss"
        check_rank(name, "hidden", hidden, 2)
        check_dim(name, "hidden", hidden, 1, self.hidden_size, "hidden_size")
        check_same_dtype(name, "hidden", hidden, "weight", self.weight)
        check_rank(name, "target", target, 1)
        check_dim(name, "target", target, 0, hidden.shape[0], "the number of tokens N of 'hidden'")
        return fused_linear_cross_entropy(hidden, self.weight, target, ignore_index=self.ignore_index,
                                          reduction=self.reduction,
                                          label_smoothing=self.label_smoothing, group=self.group,
                                          mode=self.mode, block_bytes=self.block_bytes)

    def extend_repr(self):
        return (f"hidden_size={self.hidden_size}, vocab_size={self.vocab_size}, mode={self.mode}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, group={self.group}, "
                f"block_bytes={self.block_bytes}")
