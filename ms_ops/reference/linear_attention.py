"""float64 numpy statement of linear_attention and its gradient. The test oracle and the
benchmark's spec; never on an op's path.

Tensors are taken in BNSD ([B, N, S, D], value [B, N, S, Dv]). phi(x) = ELU(x) + 1; score
a_is = phi(Q_i) · phi(K_s) over the keys s that query i attends (all, or s <= i when causal):
    out_i = Σ_s a_is V_s / (Σ_s a_is + eps).
Written with the S x S score matrix, plainly. ``rnd`` is applied after every operation: the
identity gives the reference, a rounding to fp16/bf16/fp32 the same math done naively in that
precision.
"""
import numpy as np


def _exact(a):
    return a


def _matmul(a, b, rnd):
    """a @ b; naively as a float32-accumulating GEMM of the rounded operands, rounded again."""
    if rnd is _exact:
        return a @ b
    return rnd((rnd(a).astype(np.float32) @ rnd(b).astype(np.float32)).astype(np.float64))


def _phi(x, rnd):
    return rnd(np.where(x > 0, rnd(x + 1.0), rnd(np.exp(np.minimum(x, 0.0)))))


def _scores(q, k, causal, rnd):
    a = _matmul(_phi(q, rnd), _phi(k, rnd).transpose(0, 1, 3, 2), rnd)
    if causal:
        s = q.shape[2]
        a = np.where(np.tril(np.ones((s, s), bool)), a, 0.0)
    return a


def linear_attention(q, k, v, causal=False, eps=1e-6, rnd=_exact):
    """attention_out [B, N, S, Dv]."""
    a = _scores(q, k, causal, rnd)
    den = rnd(rnd(np.sum(a, axis=-1, keepdims=True)) + eps)
    return rnd(_matmul(a, v, rnd) / den)


def linear_attention_grad(q, k, v, dout, causal=False, eps=1e-6, rnd=_exact):
    """(dq, dk, dv) for the output gradient ``dout``."""
    a = _scores(q, k, causal, rnd)
    den = rnd(rnd(np.sum(a, axis=-1, keepdims=True)) + eps)
    out = rnd(_matmul(a, v, rnd) / den)
    g = rnd(dout / den)
    r = rnd(-rnd(np.sum(rnd(dout * out), axis=-1, keepdims=True)) / den)
    da = rnd(_matmul(g, v.transpose(0, 1, 3, 2), rnd) + r)
    if causal:
        s = q.shape[2]
        da = np.where(np.tril(np.ones((s, s), bool)), da, 0.0)
    dqf = _matmul(da, _phi(k, rnd), rnd)
    dkf = _matmul(da.transpose(0, 1, 3, 2), _phi(q, rnd), rnd)
    dv = _matmul(a.transpose(0, 1, 3, 2), g, rnd)

    def dphi(x):
        return rnd(np.exp(np.minimum(x, 0.0)))

    return rnd(dqf * dphi(q)), rnd(dkf * dphi(k)), dv
