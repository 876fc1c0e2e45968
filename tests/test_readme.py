"""The README's Python snippets run as written, in both modes, and do what their comments say."""
import os
import re

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def snippets():
    with open(os.path.join(ROOT, "README.md")) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_readme_snippets(mode):
    code = snippets()
    assert len(code) == 4
    env = {}
    exec(compile("\n".join(code), "README.md", "exec"), env)  # noqa: S102 - our own README
    # "out == x": identity experts, two copies of each token weighted 0.5 each.
    np.testing.assert_allclose(env["out"].asnumpy(), env["x"].asnumpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(env["counts"].asnumpy(), [4, 4, 4])
    assert np.isfinite(env["loss"].asnumpy()) and env["loss"].shape == ()
    # Attention: the xformers call and the Cell equal MindSpore's call; a packed sequence equals
    # that sequence alone.
    ms_ops, q = env["ms_ops"], env["q"]
    np.testing.assert_array_equal(env["same"].asnumpy(), env["causal"].asnumpy())
    np.testing.assert_array_equal(env["out_cell"].asnumpy(), env["causal"].asnumpy())
    alone = ms_ops.memory_efficient_attention(q[:, 40:], q[:, 40:], q[:, 40:],
                                              attn_bias=env["attn_bias"].LowerTriangularMask())
    assert env["first"].shape == (1, 40, 8, 64)
    np.testing.assert_allclose(env["second"].asnumpy(), alone.asnumpy(), rtol=1e-5, atol=1e-6)
    # The indexer: the first query sees only key 0 (causal); every later one has 32 keys.
    idx = env["idx"].asnumpy()
    assert idx.shape == (2, 128, 1, 32) and idx[0, 0, 0, 0] == 0 and (idx[0, 0, 0, 1:] == -1).all()
    assert (idx[:, 31:] >= 0).all()
