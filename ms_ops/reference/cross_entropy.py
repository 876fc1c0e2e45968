"""float64 numpy statement of the fused linear + cross-entropy (the ops-nn trio and the public
``fused_linear_cross_entropy``). The test oracle and the benchmark's spec; never on an op's path.

With logits ``z = x W^T`` ([N, V]), the smoothed target distribution
``q = (1 - a) onehot(t) + a / V`` and ``lse = log sum_j exp(z_j)``:

    loss_r = lse_r - (1 - a) z[r, t_r] - a mean_j z[r, j]        (0 where t_r == ignore_index)
    d z    = g_r (softmax(z_r) - q_r)                             (g_r: d loss_r, 0 if ignored)
    d x    = d z W,   d W = d z^T x

The reductions over N tokens, of which K are not ignored: "sum" = sum_r loss_r, "mean" = that / K
(NaN when K = 0, e.g. N = 0, as in PyTorch), "none" = the [N] losses.

``rnd`` is a rounding applied after every operation: the identity gives the float64 reference,
a rounding to the input dtype gives the same math done naively in that precision (products and
the reduction's sum accumulating in float32, as a GEMM or a kernel's sum does).
"""
import numpy as np


def _exact(a):
    return a


def _matmul(a, b, rnd):
    """a @ b; naively (any rounding but the identity) as a float32-accumulating GEMM of the
    rounded operands, rounded once more, which is what a fp16/bf16/fp32 matmul does."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if rnd is _exact:
        return a @ b
    return rnd((rnd(a).astype(np.float32) @ rnd(b).astype(np.float32)).astype(np.float64))


def _logits(x, weight, rnd):
    return _matmul(x, np.asarray(weight).T, rnd)


def per_token_loss(x, weight, target, *, ignore_index=-100, label_smoothing=0.0, rnd=_exact):
    """Per-token loss [N] (0 for ignored tokens)."""
    z = _logits(x, weight, rnd)
    valid = target != ignore_index
    m = z.max(axis=1, keepdims=True)
    lse = rnd(rnd(np.log(rnd(rnd(np.exp(rnd(z - m))).sum(axis=1)))) + m[:, 0])
    picked = z[np.arange(len(target)), np.where(valid, target, 0)]
    mean = rnd(z.sum(axis=1) / z.shape[1])
    loss = rnd(rnd(lse - rnd((1 - label_smoothing) * picked)) - rnd(label_smoothing * mean))
    return np.where(valid, loss, 0.0)


def _naive_reduce(loss_r, valid, reduction, rnd):
    """"sum"/"mean" of the kept losses, summed one after the other in float32, then rounded."""
    total = np.float32(0.0)
    for value in np.where(valid, loss_r, 0.0).astype(np.float32):
        total = np.float32(total + value)
    if reduction == "mean":
        total = np.float32(total / np.float32(valid.sum()))
    return rnd(np.float64(total))


def _reduce_weights(valid, reduction):
    if reduction == "none":
        return None
    if reduction == "sum":
        return valid.astype(np.float64)
    return valid / valid.sum()


def fused_linear_cross_entropy(x, weight, target, *, ignore_index=-100, reduction="mean",
                               label_smoothing=0.0, grad_output=None, rnd=_exact):
    """Returns ``(loss, d_input, d_weight)``.

    ``grad_output`` is d(objective)/d(loss): a scalar for "mean"/"sum" (default 1), an [N] array
    for "none" (default ones), the convention of ``ms.grad``.
    """
    target = np.asarray(target)
    valid = target != ignore_index
    loss_r = per_token_loss(x, weight, target, ignore_index=ignore_index,
                            label_smoothing=label_smoothing, rnd=rnd)
    weights = _reduce_weights(valid, reduction)
    if weights is None:
        loss = loss_r
        g = np.ones(len(target)) if grad_output is None else np.asarray(grad_output, np.float64)
        g = np.where(valid, g, 0.0)
    else:
        loss = np.sum(loss_r * weights) if rnd is _exact else _naive_reduce(loss_r, valid, reduction, rnd)
        g = weights * (1.0 if grad_output is None else float(grad_output))
    z = _logits(x, weight, rnd)
    p = rnd(np.exp(rnd(z - z.max(axis=1, keepdims=True))))
    p = rnd(p / p.sum(axis=1, keepdims=True))
    vocab = z.shape[1]
    dz = p - label_smoothing / vocab
    rows = np.nonzero(valid)[0]
    dz[rows, target[rows]] -= 1 - label_smoothing
    dz = rnd(rnd(dz) * g[:, None])
    d_input = _matmul(dz, weight, rnd)
    d_weight = _matmul(dz.T, x, rnd)
    return loss, d_input, d_weight


def _row_sum(a, rnd):
    return rnd(a.sum(axis=1))


def online_max_sum(z, target, vocab_start_index, vocab_end_index, *, rnd=_exact, row_sum=None):
    """fused_linear_online_max_sum from the logits ``z`` [N, V_local] of one shard, as
    ``(logits_max, sum_exp_logits, predicted_logits, target_mask bytes, masked_target,
    sum_logits)``. ``row_sum(a)`` takes the row sums (default: exact, then ``rnd``).

    A row's target is in the shard when ``s <= t < e`` (``e`` exclusive). The statistics cover all
    V_local columns, including weight rows past ``e - s``. A target in ``[s + V_local, e)`` (a
    range longer than the weight) has no logit: the op refuses it, and so does this statement.
    """
    row_sum = row_sum or (lambda a: _row_sum(a, rnd))
    z, target = np.asarray(z, np.float64), np.asarray(target)
    rows, vocab = z.shape
    inside = (target >= vocab_start_index) & (target < vocab_end_index)
    col = np.where(inside, target - vocab_start_index, 0)
    if np.any(col >= vocab):
        raise ValueError("a target in the vocabulary range has no row of the weight")
    m = z.max(axis=1)
    s = row_sum(rnd(np.exp(rnd(z - m[:, None]))))
    pred = np.where(inside, rnd(z[np.arange(rows), col] - m), 0.0)
    bits = np.ones(-(-rows // 8) * 8, bool)
    bits[:rows] = ~inside
    return m, s, pred, np.packbits(bits, bitorder="little"), col, row_sum(z)


def fused_linear_online_max_sum(x, weight, target, vocab_start_index, vocab_end_index, *,
                                rnd=_exact, row_sum=None):
    """:func:`online_max_sum` of the logits ``x W^T``; also returns them (last)."""
    z = _logits(x, weight, rnd)
    return (*online_max_sum(z, target, vocab_start_index, vocab_end_index, rnd=rnd,
                            row_sum=row_sum), z)


def fused_cross_entropy_loss_with_max_sum(logits_max, sum_exp_logits, predicted_logits, sum_logits,
                                          logits=None, *, label_smoothing=0.0, vocab_size=1,
                                          rnd=_exact):
    """``(loss [N], softmax [N, V_local] or None)`` from the global statistics M, S, P (relative
    to M) and Z (sum of the raw logits, read only when ``label_smoothing`` > 0):
    loss = ln S - (1 - a) P - a (Z / vocab_size - M), softmax = exp(z - M) / S."""
    m, s, p = (np.asarray(v, np.float64) for v in (logits_max, sum_exp_logits, predicted_logits))
    a = label_smoothing
    smooth = rnd(a * rnd(rnd(np.asarray(sum_logits) / vocab_size) - m)) if a > 0 else 0.0
    loss = rnd(rnd(np.log(s) - rnd((1 - a) * p)) - smooth)
    if logits is None:
        return loss, None
    softmax = rnd(rnd(np.exp(rnd(np.asarray(logits, np.float64) - m[:, None]))) / s[:, None])
    return loss, softmax
