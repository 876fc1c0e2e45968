"""Recovering a GRAPH-mode Cell after a kernel refused its input.

MindSpore 2.10 marks a compiled graph as failed for good when any kernel in it fails at run time
(an expert id out of range, a target outside the vocabulary): every later call of that graph
raises "An error occurred in the previous step of this model execution". MindSpore's own reset
of that state exists only for Ascend's fault-tolerance modes (UCE/HCCE/ARF), so on CPU the way
back is to drop the compiled graph and let the next call compile a new one, which keeps the
Cell's parameters.
"""
from mindspore import nn
from mindspore.graph.api import _cell_graph_executor


def reset_graph(cell):
    """Drops the compiled GRAPH-mode graphs of ``cell``; its next call compiles a fresh one.

    Call it after catching the exception of a failed step (for example of a
    ``nn.TrainOneStepCell`` whose batch held a target outside the vocabulary) to keep using the
    same Cell; its parameters, and the optimizer state it holds, are kept. The failed step
    changed no parameter: the graph stopped at the kernel that refused its input. The next call
    pays the compile time once more. Nothing happens in PYNATIVE mode or for a Cell never
    compiled.

    Args:
        cell (mindspore.nn.Cell): the Cell that was called (the outermost one, e.g. the
            training step).
    """
    if not isinstance(cell, nn.Cell):
        raise TypeError(f"reset_graph: 'cell' must be a mindspore.nn.Cell, got {type(cell).__name__}")
    if cell.compile_cache:
        _cell_graph_executor.del_net_res(cell, set(cell.compile_cache))
        cell.compile_cache.clear()


class RecoveringCell(nn.Cell):
    """A Cell that, called as the outermost graph in GRAPH mode, resets its compiled graph after a
    kernel error, so one bad batch does not end it (the error is still raised). The ms_ops Cells
    and the cross-entropy's autograd Cells (called outside a graph by the function) are these."""

    def compile_and_run(self, *args, **kwargs):
        try:
            return super().compile_and_run(*args, **kwargs)
        except RuntimeError:
            reset_graph(self)
            raise
