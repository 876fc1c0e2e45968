"""Vocabulary-parallel LM-head loss on MindSpore's distributed runtime (run it through msrun).

Each worker holds one shard of the classifier and computes the loss with
``ms_ops.fused_linear_cross_entropy(..., group=...)``; the same worker also computes the loss on
the whole classifier without a group. Loss, input gradient and this rank's weight-gradient shard
must agree. Start it with ``examples/vocab_parallel_msrun.sh`` (2 workers on 127.0.0.1).

``--mode`` picks the kernel mode (default ``auto``: grad_in_forward here, as the head is trained),
``--block-bytes`` grad_in_forward's token block budget (small: several blocks), ``--dynamic`` a
GRAPH-mode compile with the token count unknown (one block then).

Prints one ``RESULT {...}`` JSON line per rank and exits non-zero when the results disagree.
"""
import argparse
import json
import sys

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.communication import GlobalComm, get_group_size, get_rank, init

import ms_ops


class ShardedHead(nn.Cell):
    """The user's view: hidden states in, loss out; gradients for the hidden states and weight."""

    def __init__(self, hidden_size, vocab_size, label_smoothing, mode, block_bytes, group):
        super().__init__()
        self.head = ms_ops.nn.FusedLinearCrossEntropyLoss(hidden_size, vocab_size,
                                                          label_smoothing=label_smoothing,
                                                          group=group, mode=mode, block_bytes=block_bytes)
        self.grad = ms.value_and_grad(self.head, grad_position=0, weights=self.head.trainable_params())

    def construct(self, hidden, target):
        return self.grad(hidden, target)


def single_process(hidden, weight, target, label_smoothing, mode, block_bytes):
    def loss_fn(h, w, t):
        return ms_ops.fused_linear_cross_entropy(h, w, t, label_smoothing=label_smoothing, mode=mode,
                                                 block_bytes=block_bytes)
    return ms.value_and_grad(loss_fn, grad_position=(0, 1))(hidden, weight, target)


def max_rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="store_true", help="GRAPH_MODE (default PYNATIVE)")
    parser.add_argument("--dynamic", action="store_true",
                        help="GRAPH_MODE with the token count unknown at compile time (set_inputs)")
    parser.add_argument("--mode", default="auto", choices=ms_ops.ops.cross_entropy.MODES)
    parser.add_argument("--block-bytes", type=int, default=None,
                        help="grad_in_forward's token block budget (small: several blocks)")
    parser.add_argument("--tokens", type=int, default=97)
    parser.add_argument("--hidden", type=int, default=123)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--tol", type=float, default=1e-5)
    args = parser.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE if args.graph or args.dynamic else ms.PYNATIVE_MODE)
    init()
    rank, ranks = get_rank(), get_group_size()
    group = GlobalComm.WORLD_COMM_GROUP
    shard = args.vocab // ranks

    # Every rank draws the same data; rank r keeps rows [r*shard, (r+1)*shard) of the classifier.
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((args.tokens, args.hidden)).astype(np.float32)
    weight = (0.05 * rng.standard_normal((args.vocab, args.hidden))).astype(np.float32)
    target = rng.integers(0, args.vocab, args.tokens).astype(np.int32)
    target[::7] = -100  # ignored tokens
    hidden_t, target_t = ms.Tensor(hidden), ms.Tensor(target)

    net = ShardedHead(args.hidden, args.vocab, args.label_smoothing, args.mode, args.block_bytes, group)
    net.head.weight.set_data(ms.Tensor(weight[rank * shard:(rank + 1) * shard]))
    if args.dynamic:
        net.set_inputs(ms.Tensor(shape=[None, args.hidden], dtype=ms.float32), ms.Tensor(shape=[None], dtype=ms.int32))
    loss, (d_hidden, (d_weight,)) = net(hidden_t, target_t)

    ref_loss, (ref_d_hidden, ref_d_weight) = single_process(hidden_t, ms.Tensor(weight), target_t,
                                                            args.label_smoothing, args.mode, args.block_bytes)
    errors = {
        "loss": max_rel_err(loss.asnumpy(), ref_loss.asnumpy()),
        "input_grad": max_rel_err(d_hidden.asnumpy(), ref_d_hidden.asnumpy()),
        "weight_grad": max_rel_err(d_weight.asnumpy(),
                                   ref_d_weight.asnumpy()[rank * shard:(rank + 1) * shard]),
    }
    ok = all(e <= args.tol for e in errors.values())
    print("RESULT " + json.dumps({"rank": rank, "ranks": ranks, "loss": float(loss.asnumpy()),
                                  "max_rel_err": errors, "ok": ok}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
