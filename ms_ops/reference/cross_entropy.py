"""float64 numpy statement of the fused linear + cross-entropy (the ops-nn trio and the public
``fused_linear_cross_entropy``). The test oracle and the benchmark's spec; never on an op's path.

With logits ``z = x W^T`` ([N, V]), the smoothed target distribution
``q = (1 - a) onehot(t) + a / V`` and ``lse = log sum_j exp(z_j)``:

    loss_r = lse_r - (1 - a) z[r, t_r] - a mean_j z[r, j]        (0 where t_r == ignore_index)
    d z    = g_r (softmax(z_r) - q_r)                             (g_r: d loss_r, 0 if ignored)
    d x    = d z W,   d W = d z^T x

``rnd`` is a rounding applied after every operation: the identity gives the float64 reference,
a rounding to the input dtype gives the same math done naively in that precision.
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
        loss = np.sum(loss_r * weights)
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
