"""Vocabulary-parallel fused linear + cross-entropy.

:func:`fused_linear_cross_entropy` is the training op (loss with gradients, optionally over a
tensor-parallel group). The three kernel functions below it are the CANN ops-nn trio it is made
of, for callers who schedule the collectives themselves; they have no gradients of their own.
"""
import functools

import mindspore as ms
from mindspore import ops
from mindspore.communication import GlobalComm, get_group_size, get_rank
from mindspore.graph.api import _pynative_executor

from ms_ops._custom import custom_op
from ms_ops.bprop.cross_entropy import (FusedLinearCrossEntropyFunction, GradInForwardFunction,
                                        make_cross_entropy_loss_reduce_bprop)
from ms_ops.kernels.cross_entropy import (CROSS_ENTROPY_LOSS_REDUCE, FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM,
                                          FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD,
                                          FUSED_LINEAR_ONLINE_MAX_SUM)
from ms_ops.ops._validation import (FLOAT_DTYPES, check_choice, check_dim, check_dtype, check_float,
                                    check_int, check_rank, check_same_dtype, known)

TARGET_DTYPES = (ms.int32, ms.int64)
MODES = ("auto", "grad_in_forward", "memory_saving", "high_performance")
REDUCTIONS = ("mean", "sum", "none")
MIN_DEFAULT_BLOCK_BYTES = 16 << 20
# The kernel's largest row chunk: beyond it a larger default block would only add memory.
MAX_DEFAULT_BLOCK_ROWS = 512
# Rows the default block leaves to the step's fixed extra memory (see default_block_bytes).
DEFAULT_BLOCK_ROWS_OFF = 128
# MindSpore's CPU collectives run only on this group (the world group of init() under msrun).
CPU_WORLD_GROUP = "mccl_world_group"


def _check_linear_args(op, input, weight, target):
    check_rank(op, "input", input, 2)
    check_rank(op, "weight", weight, 2)
    check_rank(op, "target", target, 1)
    check_dtype(op, "input", input, FLOAT_DTYPES)
    check_same_dtype(op, "weight", weight, "input", input)
    check_dtype(op, "target", target, TARGET_DTYPES)
    check_dim(op, "weight", weight, 1, input.shape[1], "the hidden size H of 'input'")
    check_dim(op, "target", target, 0, input.shape[0], "the number of tokens N of 'input'")
    vocab = weight.shape[0]
    if not known(vocab):
        raise ValueError(f"{op}: 'weight' must have a static vocabulary dimension (dimension 0) in "
                         f"GRAPH mode: the vocabulary range is a kernel attribute; give it in set_inputs")
    if vocab < 1:
        raise ValueError(f"{op}: 'weight' must have at least one vocabulary row, got shape {weight.shape}")
    return vocab


def check_group(op, group):
    """A communication group name this device can use. On CPU, MindSpore's collectives work only
    on the world group of ``init()`` under msrun; any other name would fail later inside
    AllGather ("AllGather only support mccl_world_group on CPU"), and without ``init()`` MindSpore
    reports every group as one rank of rank 0."""
    if not isinstance(group, str):
        raise TypeError(f"{op}: 'group' must be a communication group name (str) or None, "
                        f"got {type(group).__name__}")
    if ms.get_context("device_target") != "CPU":
        return
    if not GlobalComm.INITED or group != GlobalComm.WORLD_COMM_GROUP:
        state = "" if GlobalComm.INITED else "; mindspore.communication.init() has not run"
        raise ValueError(f"{op}: 'group' on CPU must be the world group, "
                         f"mindspore.communication.GlobalComm.WORLD_COMM_GROUP ({CPU_WORLD_GROUP!r} "
                         f"once init() has run in a process started by msrun): MindSpore's CPU "
                         f"collectives work on no other group; got {group!r}{state}")


def _group_layout(op, group, vocab_local, vocab_start_index):
    """(vocab_start_index, vocab_size) of this rank: shards of equal size, in rank order by default."""
    if group is None:
        if vocab_start_index not in (None, 0):
            raise ValueError(f"{op}: 'vocab_start_index' needs a 'group' (without one the weight holds "
                             f"the whole vocabulary), got {vocab_start_index}")
        return 0, vocab_local
    check_group(op, group)
    vocab_size = vocab_local * get_group_size(group)
    start = get_rank(group) * vocab_local if vocab_start_index is None else vocab_start_index
    check_int(op, "vocab_start_index", start, low=0)
    if start + vocab_local > vocab_size:
        raise ValueError(f"{op}: the shard [{start}, {start + vocab_local}) from 'vocab_start_index' and "
                         f"'weight' ({vocab_local} rows) does not fit the group's vocabulary of "
                         f"{vocab_size} (= {vocab_local} rows x {vocab_size // vocab_local} ranks)")
    return start, vocab_size


@functools.lru_cache(maxsize=None)
def _function(op, vocab_local, group, vocab_start_index, ignore_index, label_smoothing,
              high_performance):
    """The autograd Cell of one configuration. Cached, which also makes GRAPH mode run it in
    Python at compile time (the group queries and the Cell are compile-time constants)."""
    start, vocab_size = _group_layout(op, group, vocab_local, vocab_start_index)
    return FusedLinearCrossEntropyFunction(start, start + vocab_local, vocab_size, ignore_index,
                                           label_smoothing, high_performance, group)


def default_block_bytes(vocab_local, hidden):
    """grad_in_forward's default token block budget: float32 logits of ``H / 4 - 128`` rows (at
    most 512), i.e. ``V_local * (H - 512)`` bytes, and at least 16 MiB (``hidden`` None, unknown
    at compile time: 16 MiB). Each token block passes over the whole weight and weight gradient,
    so larger blocks take fewer passes; the step's extra memory is the block plus about 32 MiB that
    do not depend on it (the kernel blocks' local memories, the library's first use, MindSpore's
    memory pool); the block's pages go back to the system after the kernel.
    Measured at N = 4096, V = 32000 on the CPU twin (one run each, Zen 4): at H = 1024 the 16 MiB
    floor (131 rows) took 5.21 s with 0.060 GiB of extra memory, 160 rows (the earlier default)
    5.01 s with 0.064 GiB, against PyTorch's chunked ``linear_cross_entropy`` at 6.65 s and
    0.250 GiB: the floor keeps the extra memory under a quarter of PyTorch's; at H = 2048, 384
    rows took 8.67 s with 0.090 GiB against PyTorch's 10.96 s and 0.377 GiB."""
    if hidden is None:
        return MIN_DEFAULT_BLOCK_BYTES
    rows = min(max(hidden // 4 - DEFAULT_BLOCK_ROWS_OFF, 0), MAX_DEFAULT_BLOCK_ROWS)
    return max(MIN_DEFAULT_BLOCK_BYTES, 4 * vocab_local * rows)


def _block_bounds(rows, vocab_local, block_bytes):
    """Row ranges of the token blocks whose float32 logits ``[c, V_local]`` fit ``block_bytes``
    (at least one row each); empty for a single block, or when N is unknown (``rows`` None)."""
    block_rows = max(1, block_bytes // (4 * vocab_local))
    if rows is None or rows <= block_rows:
        return ()
    return tuple((r0, min(r0 + block_rows, rows)) for r0 in range(0, rows, block_rows))


@functools.lru_cache(maxsize=None)
def _grad_in_forward_function(op, vocab_local, group, vocab_start_index, ignore_index, label_smoothing,
                              reduction, block_bytes, rows):
    """The grad-in-forward autograd Cell of one configuration (cached as :func:`_function`).
    ``rows``: the static N of the vocabulary-parallel token blocks, else None."""
    start, vocab_size = _group_layout(op, group, vocab_local, vocab_start_index)
    bounds = _block_bounds(rows, vocab_local, block_bytes) if group is not None else ()
    return GradInForwardFunction(start, start + vocab_local, vocab_size, ignore_index, label_smoothing,
                                 reduction, group, block_bytes, bounds)


@functools.lru_cache(maxsize=None)
def resolve_mode(mode, reduction, gradients):
    """The kernel mode that computes ``mode`` for ``reduction``.

    ``"auto"`` is ``"grad_in_forward"`` when ``gradients`` (a backward is expected) and the loss is
    a scalar (``"mean"``, ``"sum"``), else ``"memory_saving"``; ``"grad_in_forward"`` with
    ``reduction="none"`` is ``"memory_saving"`` (a per-token upstream gradient is only known in
    the backward). The other modes stand for themselves. Cached: a pure function, which GRAPH
    mode then runs in Python at compile time.
    """
    scalar = reduction != "none"
    if mode == "auto":
        return "grad_in_forward" if gradients and scalar else "memory_saving"
    if mode == "grad_in_forward" and not scalar:
        return "memory_saving"
    return mode


def gradients_expected(input):
    """Whether a backward may follow the loss of ``input``. Run op by op, PyNative records for a
    backward exactly inside ``ms.grad``/``value_and_grad`` (and the like). In a compiled graph
    (GRAPH mode, ``ms.jit``) nothing tells the compiler whether the graph will be differentiated:
    a backward is assumed. There a graph input is a variable at compile time, while op by op
    every tensor is a constant. (MindSpore 2.10 leaves its PyNative grad state set after an
    exception inside ``ms.grad``; later calls of the process then count as needing gradients,
    which costs time, not correctness.)"""
    if not ops.isconstant(input):
        return True
    return _pynative_executor.requires_grad()


def fused_linear_cross_entropy(input, weight, target, *, ignore_index=-100, reduction="mean",
                               label_smoothing=0.0, group=None, vocab_start_index=None, mode="auto",
                               block_bytes=None):
    r"""Cross-entropy of the logits ``input @ weight^T`` without materialising them.

    With logits :math:`z = x W^T`, the smoothed target distribution
    :math:`q_r = (1-\alpha)\,\mathrm{onehot}(t_r) + \alpha / V` and ignored tokens
    (:math:`t_r = \text{ignore\_index}`) contributing nothing:

    .. math::
        \ell_r = \log\sum_j e^{z_{rj}} - (1-\alpha)\, z_{r t_r} - \frac{\alpha}{V} \sum_j z_{rj},
        \qquad \frac{\partial \ell_r}{\partial z_{rj}} = \mathrm{softmax}(z_r)_j - q_{rj}

    Modes (kernels, memory and GEMMs; all compute the same function):

    - ``"grad_in_forward"``: the forward computes the loss and both gradients of the summed loss
      while each token block's logits are at hand (3 GEMMs per token, as high_performance, but
      without its ``[N, V]`` softmax), and the backward only scales them by the upstream
      gradient (kernel cross_entropy_grad_scale). A token block holds the rows whose float32
      logits fit ``block_bytes``. Extra memory: one block of logits plus small per-row
      statistics (fp16/bf16 with several blocks: also a ``[V, H]`` weight-gradient remainder in
      the input dtype, which with the output carries the running sum at about twice the dtype's
      precision), and the input and weight gradients, held from the forward to the backward
      (which writes scaled copies). The stored gradients are those of the sum over the tokens,
      before the backward's 1 / count of "mean": in float16 they must fit its range (65504).
      For a scalar loss (``reduction`` "mean" or "sum"); with ``reduction="none"`` it falls
      back to ``"memory_saving"``.
    - ``"memory_saving"``: no ``[N, V]`` buffer at any time: the forward keeps an online max and
      sum over vocabulary tiles and the backward recomputes each logits tile (4 GEMMs per token).
    - ``"high_performance"``: the forward keeps the ``[N, V]`` float32 softmax for the backward
      (3 GEMMs per token); in float32 the backward also takes partial input gradients of up to a
      quarter of the softmax's bytes.
    - ``"auto"`` (default): ``"grad_in_forward"`` when gradients will be needed and the loss is a
      scalar, else ``"memory_saving"`` (inference, ``reduction="none"``). Run op by op (PYNATIVE
      mode), gradients are needed inside ``ms.grad``/``value_and_grad``. In a compiled graph
      (GRAPH mode, ``ms.jit``) the compiler cannot know whether the graph will be
      differentiated, so a scalar loss takes ``"grad_in_forward"`` there: for inference in GRAPH
      mode pass ``mode="memory_saving"`` (grad_in_forward's forward does three times the GEMMs
      of memory_saving's). :func:`resolve_mode` states the rule.

    Vocabulary parallel: with ``group``, ``weight`` is this rank's shard of an ``[V, H]``
    classifier split in equal parts, in rank order unless ``vocab_start_index`` says where it
    starts; ``V = V_local * group size``. The ranks combine their partial results with
    all-reduces (MAX of the row max, one SUM of the rescaled exp-sums, target logits and logit
    sums). Every rank gets the full loss and the full input gradient (summed over the group);
    each keeps the gradient of its own weight shard. On CPU the group must be MindSpore's world
    group (see :func:`check_group`). In ``"grad_in_forward"`` mode the token blocks are a
    Python loop over the kernels of the other modes in high-performance form (the trio and the
    collectives on block-sized tensors, then the gradient kernel with the block's softmax), all
    in the forward. When N is unknown at compile time (GRAPH mode, ``set_inputs`` with a None
    dimension) the whole batch is one block. Its extra memory is higher than without a group:
    per block the float32 logits and softmax (twice ``block_bytes``) and the block's weight
    gradient besides a float32 running sum of it, then the input gradient about three times
    (blocks, their concatenation, the group sum). fp16/bf16 weight gradients are rounded per
    block before the float32 sum.

    Args:
        input (Tensor): hidden states ``[N, H]``, float32/float16/bfloat16.
        weight (Tensor): classifier (shard) ``[V_local, H]``, dtype of input.
        target (Tensor): class ids ``[N]``, int32/int64, in ``[0, V)`` or ``ignore_index``.

    Keyword Args:
        ignore_index (int): target value whose tokens are skipped. Default -100.
        reduction (str): ``"mean"`` over the non-ignored tokens, ``"sum"``, or ``"none"``
            (per-token losses, 0 for ignored ones). Default ``"mean"``.
        label_smoothing (float): :math:`\alpha \in [0, 1)`. Default 0.
        group (str, optional): tensor-parallel communication group. Default None.
        vocab_start_index (int, optional): first vocabulary id of this rank's shard (with
            ``group``). Default ``rank * V_local``.
        mode (str): ``"auto"``, ``"grad_in_forward"``, ``"memory_saving"`` or
            ``"high_performance"``. Default ``"auto"``.
        block_bytes (int, optional): grad_in_forward's budget of one token block's float32
            logits, in bytes; a block has at least one row (without a group: one chunk of 16 to
            512 rows, as many as the budget holds) whatever the budget. Default
            :func:`default_block_bytes`: ``V_local * min(H - 512, 2048)`` bytes, at least 16 MiB
            (``H / 4 - 128`` rows: 131 at H = 1024 and V = 32000, 384 at H = 2048), so that the
            step's extra memory stays under a quarter of PyTorch's. Each token block passes
            over the whole weight and its gradient: larger blocks are faster. The results depend
            on it through the chunk size only.

    Returns:
        Tensor, float32: a scalar, or ``[N]`` for ``reduction="none"``. Differentiable w.r.t.
        input and weight. With no token that counts (all ignored, or none at all: ``N = 0``),
        ``"mean"`` gives NaN (0/0) and ``"sum"`` 0, as PyTorch does; ``"none"`` gives the ``[N]``
        losses (shape ``[0]`` for ``N = 0``). Their gradients are then 0 (``[0, H]`` for the
        input, zeros of the weight's shape). The same holds in GRAPH mode with ``N`` unknown at
        compile time: the reduction is a kernel (cross_entropy_loss_reduce), not a rule of this
        function.
    """
    op = "fused_linear_cross_entropy"
    vocab_local = _check_linear_args(op, input, weight, target)
    check_int(op, "ignore_index", ignore_index)
    check_choice(op, "reduction", reduction, REDUCTIONS)
    check_choice(op, "mode", mode, MODES)
    check_float(op, "label_smoothing", label_smoothing, 0.0, 1.0)
    if block_bytes is None:
        block_bytes = default_block_bytes(vocab_local, input.shape[1] if known(input.shape[1]) else None)
    check_int(op, "block_bytes", block_bytes, low=1)
    kernel_mode = resolve_mode(mode, reduction, gradients_expected(input))
    if kernel_mode == "grad_in_forward":
        # The token blocks of the vocabulary-parallel chain are a loop over static row ranges.
        rows = input.shape[0] if group is not None and known(input.shape[0]) else None
        function = _grad_in_forward_function(op, vocab_local, group, vocab_start_index, ignore_index,
                                             float(label_smoothing), reduction, block_bytes, rows)
        return function(input, weight, target)[0].reshape(())
    function = _function(op, vocab_local, group, vocab_start_index, ignore_index,
                         float(label_smoothing), kernel_mode == "high_performance")
    loss = function(input, weight, target)[0]
    reduce = custom_op(CROSS_ENTROPY_LOSS_REDUCE, make_cross_entropy_loss_reduce_bprop, api=op,
                       ignore_index=ignore_index, reduction=reduction)
    out = reduce(loss, target)[0]
    # The kernel gives a reduced loss the shape [1] (see its infer hook); callers get a 0-d tensor.
    return out if reduction == "none" else out.reshape(())


def fused_linear_online_max_sum(input, weight, target, vocab_start_index, vocab_end_index, *,
                                return_logits=False, vocab_size=None, ignore_index=-100):
    r"""Part 1 of the forward on one vocabulary shard (CANN ``FusedLinearOnlineMaxSum``).

    With :math:`z = x W^T` (``[N, V_local]``, float32 accumulation), ``s = vocab_start_index``,
    ``e = vocab_end_index`` and :math:`m_r = \max_j z_{rj}`:

    - ``logits_max_local`` = :math:`m`; ``sum_exp_logits_local`` = :math:`\sum_j e^{z_{rj}-m_r}`
    - ``predicted_logits_local`` = :math:`z_{r,t_r-s} - m_r` if :math:`s \le t_r < e`, else 0
    - ``target_mask``: bit ``r % 8`` of byte ``r // 8`` is 1 when :math:`t_r` is outside
      ``[s, e)`` (padding bits are 1); ``masked_target`` = :math:`t_r - s` inside, else 0
    - ``vocab_parallel_logits`` = :math:`z` if ``return_logits`` else shape ``[0]``
    - ``sum_logits_local`` = :math:`\sum_j z_{rj}` (beyond CANN: the label-smoothing term)

    The range ``[s, e)`` need not have ``V_local`` ids (CANN requires only ``e >= s``). The
    statistics always cover all ``V_local`` columns: with ``e - s < V_local`` the weight rows from
    ``e - s`` on (padding rows, say) take part in the max and the sums, but no target maps to
    them (a target ``>= e`` is masked). With ``e - s > V_local`` a target in
    ``[s + V_local, e)`` would have no logit, and the op refuses it (RuntimeError naming it).

    ``e`` is exclusive: a target equal to ``e`` is masked. CANN's kernel and its test golden
    compare ``target >= vocabEndIndex``; its documentation writes the mask as
    ``target > vocabEndIndex``. We follow the kernel.

    Args:
        input (Tensor): ``[N, H]`` float32/float16/bfloat16. weight (Tensor): ``[V_local, H]``.
        target (Tensor): ``[N]`` int32/int64, in ``[0, vocab_size)`` or ``ignore_index``.
        vocab_start_index, vocab_end_index (int): this shard's vocabulary range ``[s, e)``,
            ``0 <= s <= e``.

    Keyword Args:
        return_logits (bool): also return the logits (high-performance mode). Default False.
        vocab_size (int, optional): the whole vocabulary, for target checks. Default ``e``.
        ignore_index (int): target value allowed outside the vocabulary. Default -100.

    Returns:
        tuple of 7 Tensors, in the order above (float32 except target_mask uint8
        ``[ceil(N/8)]`` and masked_target in target's dtype).
    """
    op = "fused_linear_online_max_sum"
    _check_linear_args(op, input, weight, target)
    check_int(op, "vocab_start_index", vocab_start_index, low=0)
    check_int(op, "vocab_end_index", vocab_end_index, low=vocab_start_index)
    vocab_size = vocab_end_index if vocab_size is None else vocab_size
    check_int(op, "vocab_size", vocab_size, low=vocab_end_index)
    check_int(op, "ignore_index", ignore_index)
    if not isinstance(return_logits, bool):
        raise TypeError(f"{op}: 'return_logits' must be a bool, got {type(return_logits).__name__}")
    prim = custom_op(FUSED_LINEAR_ONLINE_MAX_SUM, vocab_start_index=vocab_start_index,
                     vocab_end_index=vocab_end_index, return_logits=return_logits,
                     vocab_size=vocab_size, ignore_index=ignore_index)
    return prim(input, weight, target)


def _check_rows(op, names_and_tensors, rows):
    for name, t in names_and_tensors:
        check_rank(op, name, t, 1)
        check_dtype(op, name, t, (ms.float32,))
        check_dim(op, name, t, 0, rows, "the number of tokens N")


def fused_cross_entropy_loss_with_max_sum(logits_max, sum_exp_logits, predicted_logits, *,
                                          sum_logits=None, vocab_parallel_logits=None,
                                          label_smoothing=0.0, vocab_size=None):
    r"""Part 2 of the forward, after the collectives (CANN ``FusedCrossEntropyLossWithMaxSum``).

    .. math::
        \text{loss}_r = \ln S_r - (1-\alpha) P_r - \alpha\,(Z_r / V - M_r), \qquad
        \text{softmax}_{rj} = e^{z_{rj} - M_r} / S_r

    with the global row max ``M = logits_max``, ``S = sum_exp_logits`` and
    ``P = predicted_logits`` relative to M, and ``Z = sum_logits`` (needed when
    :math:`\alpha > 0`, with ``vocab_size`` V). Computed in float32 whatever the dtype of the
    logits.

    Args:
        logits_max, sum_exp_logits, predicted_logits (Tensor): ``[N]`` float32.

    Keyword Args:
        sum_logits (Tensor, optional): ``[N]`` float32, the sum of the raw logits. Only read with
            label smoothing.
        vocab_parallel_logits (Tensor, optional): ``[N, V_local]`` float32, float16 or bfloat16
            (CANN's dtypes); gives the softmax.
        label_smoothing (float): :math:`\alpha \in [0, 1)`. Default 0.
        vocab_size (int, optional): V, required with label smoothing.

    Returns:
        tuple: ``loss`` ``[N]`` float32, and ``softmax`` ``[N, V_local]`` float32 for logits of any
        dtype, as CANN's ``softMaxOutOptional`` (shape ``[0]`` without ``vocab_parallel_logits``).
    """
    op = "fused_cross_entropy_loss_with_max_sum"
    rows = logits_max.shape[0] if isinstance(logits_max, ms.Tensor) else None
    _check_rows(op, (("logits_max", logits_max), ("sum_exp_logits", sum_exp_logits),
                     ("predicted_logits", predicted_logits)), rows)
    check_float(op, "label_smoothing", label_smoothing, 0.0, 1.0)
    if label_smoothing > 0:
        if sum_logits is None or vocab_size is None:
            raise ValueError(f"{op}: label smoothing needs 'sum_logits' and 'vocab_size'")
        check_int(op, "vocab_size", vocab_size, low=1)
    if sum_logits is not None:
        _check_rows(op, (("sum_logits", sum_logits),), rows)
    if vocab_parallel_logits is not None:
        check_rank(op, "vocab_parallel_logits", vocab_parallel_logits, 2)
        check_dtype(op, "vocab_parallel_logits", vocab_parallel_logits, FLOAT_DTYPES)
        check_dim(op, "vocab_parallel_logits", vocab_parallel_logits, 0, rows, "the number of tokens N")
    prim = custom_op(FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM, label_smoothing=label_smoothing,
                     vocab_size=vocab_size or 1, has_logits=vocab_parallel_logits is not None)
    # The kernel reads neither stand-in (sum_logits only with label smoothing).
    placeholder = ops.zeros((1,), ms.float32)
    return prim(logits_max, sum_exp_logits, predicted_logits,
                placeholder if sum_logits is None else sum_logits,
                placeholder if vocab_parallel_logits is None else vocab_parallel_logits)


def fused_linear_cross_entropy_loss_grad(grad, input, weight, target_mask, masked_target, *,
                                         logits_max=None, sum_exp_logits=None, softmax=None,
                                         label_smoothing=0.0, vocab_size=None):
    r"""The backward on one vocabulary shard (CANN ``FusedLinearCrossEntropyLossGrad``).

    .. math::
        G_{rj} = g_r \left(p_{rj} - (1-\alpha)[\text{row } r \text{ unmasked},\ j = \text{masked\_target}_r]
                 - \alpha / V\right), \qquad
        \text{input\_grad} = G W, \quad \text{weight\_grad} = G^T x

    where ``p`` is ``softmax`` (high-performance mode) or is recomputed tile by tile as
    :math:`e^{x_r W_j^T - M_r} / S_r` from ``logits_max`` and ``sum_exp_logits``
    (memory-saving mode, no ``[N, V_local]`` buffer). Accumulation in float32; deterministic.

    Args:
        grad (Tensor): ``[N]`` float32, d loss per token. input (Tensor): ``[N, H]``.
        weight (Tensor): ``[V_local, H]``, dtype of input.
        target_mask (Tensor): ``[ceil(N/8)]`` uint8, from :func:`fused_linear_online_max_sum`.
        masked_target (Tensor): ``[N]`` int32/int64, idem.

    Keyword Args:
        logits_max, sum_exp_logits (Tensor): ``[N]`` float32, global; needed without softmax.
        softmax (Tensor, optional): ``[N, V_local]`` float32.
        label_smoothing (float): :math:`\alpha \in [0, 1)`. Default 0.
        vocab_size (int, optional): the whole vocabulary V. Default ``V_local``.

    Returns:
        tuple: ``input_grad`` ``[N, H]`` and ``weight_grad`` ``[V_local, H]``, dtype of input.
    """
    op = "fused_linear_cross_entropy_loss_grad"
    check_rank(op, "input", input, 2)
    check_rank(op, "weight", weight, 2)
    check_dtype(op, "input", input, FLOAT_DTYPES)
    check_same_dtype(op, "weight", weight, "input", input)
    check_dim(op, "weight", weight, 1, input.shape[1], "the hidden size H of 'input'")
    rows = input.shape[0]
    _check_rows(op, (("grad", grad),), rows)
    check_rank(op, "target_mask", target_mask, 1)
    check_dtype(op, "target_mask", target_mask, (ms.uint8,))
    check_rank(op, "masked_target", masked_target, 1)
    check_dtype(op, "masked_target", masked_target, TARGET_DTYPES)
    check_dim(op, "masked_target", masked_target, 0, rows, "the number of tokens N")
    check_float(op, "label_smoothing", label_smoothing, 0.0, 1.0)
    vocab_local = weight.shape[0]
    vocab_size = vocab_local if vocab_size is None else vocab_size
    check_int(op, "vocab_size", vocab_size, low=1)
    placeholder = ops.zeros((1,), ms.float32)
    if softmax is None:
        if logits_max is None or sum_exp_logits is None:
            raise ValueError(f"{op}: without 'softmax' (memory-saving mode) 'logits_max' and "
                             f"'sum_exp_logits' are required")
        _check_rows(op, (("logits_max", logits_max), ("sum_exp_logits", sum_exp_logits)), rows)
    else:
        check_rank(op, "softmax", softmax, 2)
        check_dtype(op, "softmax", softmax, (ms.float32,))
        check_dim(op, "softmax", softmax, 0, rows, "the number of tokens N")
        check_dim(op, "softmax", softmax, 1, vocab_local, "the vocabulary rows of 'weight'")
    prim = custom_op(FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD, label_smoothing=label_smoothing,
                     vocab_size=vocab_size, has_softmax=softmax is not None)
    return prim(grad, input, weight, target_mask, masked_target,
                placeholder if logits_max is None else logits_max,
                placeholder if sum_exp_logits is None else sum_exp_logits,
                placeholder if softmax is None else softmax)
