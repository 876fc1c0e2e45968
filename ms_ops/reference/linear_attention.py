"""float64 numpy statement of linear_attention and its gradient. The test oracle and the
benchmark's spec; never on an op's path.

Tensors are taken in BNSD ([B, N, S, D], value [B, N, S, Dv]). phi(x) = ELU(x) + 1; score
a_is = phi(Q_i) · phi(K_s) over the keys s that query i attends (all, or s <= i when causal):
    out_i = Σ_s a_is V_s / (Σ_s a_is + eps).
Causal attention is written with the masked S x S scores; non-causal attention in its linear
form, phi(Q) (phi(K)ᵀ V) / (phi(Q) Σ phi(K) + eps), or with ``scores=True`` with the S x S scores
too. ``rnd`` is applied after every operation: the identity gives the reference, a rounding to
fp16/bf16/fp32 the same math done naively in that precision. The two non-causal forms round
differently (the linear one like the kernel's state, the scores one like a softmax attention), and
neither is always the less exact, so a test takes the larger of their naive errors.
"""
import numpy as np


def _exact(a):
    return a


def _t(a):
    return a.transpose(0, 1, 3, 2)


def _matmul(a, b, rnd):
    """a @ b; naively as a float32-accumulating GEMM of the rounded operands, rounded again."""
    if rnd is _exact:
        return a @ b
    return rnd((rnd(a).astype(np.float32) @ rnd(b).astype(np.float32)).astype(np.float64))


def _sum(a, axis, rnd):
    """Sum over ``axis`` (kept); naively accumulated in float32."""
    if rnd is _exact:
        return np.sum(a, axis=axis, keepdims=True)
    return rnd(np.sum(a.astype(np.float32), axis=axis, keepdims=True).astype(np.float64))


def _phi(x, rnd):
    return rnd(np.where(x > 0, rnd(x + 1.0), rnd(np.exp(np.minimum(x, 0.0)))))


def _dphi(x, rnd):
    return rnd(np.exp(np.minimum(x, 0.0)))


def _mask(a, causal):
    if not causal:
        return a
    s = a.shape[-1]
    return np.where(np.tril(np.ones((s, s), bool)), a, 0.0)


def _scores(fq, fk, causal, rnd):
    return _mask(_matmul(fq, _t(fk), rnd), causal)


def _forward(q, k, v, causal, eps, rnd, scores):
    """(phi(Q), phi(K), scores or None, num, den)."""
    fq, fk = _phi(q, rnd), _phi(k, rnd)
    if causal or scores:
        a = _scores(fq, fk, causal, rnd)
        return fq, fk, a, _matmul(a, v, rnd), rnd(_sum(a, -1, rnd) + eps)
    num = _matmul(fq, _matmul(_t(fk), v, rnd), rnd)
    return fq, fk, None, num, rnd(_matmul(fq, _t(_sum(fk, 2, rnd)), rnd) + eps)


def linear_attention(q, k, v, causal=False, eps=1e-6, rnd=_exact, scores=False):
    """attention_out [B, N, S, Dv]."""
    *_, num, den = _forward(q, k, v, causal, eps, rnd, scores)
    return rnd(num / den)


def linear_attention_grad(q, k, v, dout, causal=False, eps=1e-6, rnd=_exact, scores=False):
    """(dq, dk, dv) for the output gradient ``dout``."""
    fq, fk, a, num, den = _forward(q, k, v, causal, eps, rnd, scores)
    out = rnd(num / den)
    g = rnd(dout / den)
    # The gradient reaching den_i.
    r = rnd(-_sum(rnd(dout * out), -1, rnd) / den)
    if a is not None:
        da = _mask(rnd(_matmul(g, _t(v), rnd) + r), causal)
        dfq = _matmul(da, fk, rnd)
        dfk = _matmul(_t(da), fq, rnd)
        dv = _matmul(_t(a), g, rnd)
    else:
        kv, z = _matmul(_t(fk), v, rnd), _t(_sum(fk, 2, rnd))
        dfq = rnd(_matmul(g, _t(kv), rnd) + rnd(r * _t(z)))
        gs, rz = _matmul(_t(fq), g, rnd), _t(_matmul(_t(fq), r, rnd))
        dfk = rnd(_matmul(v, _t(gs), rnd) + rz)
        dv = _matmul(fk, gs, rnd)
    return rnd(dfq * _dphi(q, rnd)), rnd(dfk * _dphi(k, rnd)), dv
