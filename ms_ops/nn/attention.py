"""Flash attention as a Cell, with the arguments of MindSpore's (MindFormers') ``FlashAttention``."""
import math

from ms_ops._graph import RecoveringCell
from ms_ops.ops._attention_args import COMPRESSED_MASKS, compressed_mask
from ms_ops.ops._validation import check_choice, check_int, check_tensor, known
from ms_ops.ops.attention import flash_attention_score

_NAME = "FlashAttention"
_LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")


class FlashAttention(RecoveringCell):
    r"""Multi-head attention by :func:`ms_ops.flash_attention_score`, its options fixed at
    construction.

    Args:
        head_num (int): N1, the query heads.
        keep_prob (float): 1 - dropout probability, in (0, 1]. Default 1.0 (no dropout);
            ``flash_attention_score`` says whether a lower value is supported.
        scale_value (float, optional): the scale of ``Q K^T``. Default 1.0 (MindSpore's default:
            pass ``1 / sqrt(D)`` for the usual scaling); None takes ``1 / sqrt(D)`` from the
            query's head dim.
        pre_tokens, next_tokens (int): with ``sparse_mode=0`` and an ``attn_mask`` (which the
            band needs, as in CANN), query i sees keys ``i - pre_tokens <= j <= i + next_tokens``.
            Default 2147483647 (every key).
        input_layout (str): "BSH" (default), "SBH", "BSND", "BNSD" or "TND".
        sparse_mode (int): CANN's sparse mode (0 band, 2 causal from the top left, 3 causal from
            the bottom right, ...; see :func:`ms_ops.flash_attention_score`). Default 0. Modes
            2, 3, 4, 6, 7 and 8 need no mask from the caller: without ``attn_mask`` the Cell
            passes the mode's compressed mask (the function itself computes full attention
            without one, as CANN does).
        use_alibi_mask (bool): whether ``construct`` takes an ALiBi (or any position) bias
            ``alibi_mask``; it becomes ``flash_attention_score``'s ``real_shift`` (with its default
            ``pse_type=1``, MindSpore's: added before the scaling). Default False.

    Inputs:
        query, key, value (Tensor): in ``input_layout``, as :func:`ms_ops.flash_attention_score`.
        attn_mask (Tensor, optional): bool/uint8, 1 = masked out, as ``flash_attention_score``;
            for the modes with a compressed mask the Cell supplies it when None.
        alibi_mask (Tensor, optional): with ``use_alibi_mask`` only, and then required: the bias
            ``real_shift`` (``[B, N1, S1, S2]``, ``[1, N1, S1, S2]``, ``[B, N1, 1, S2]`` or the
            ALiBi-compressed ``[B or 1, N1, 1024, S2]``; see :func:`ms_ops.flash_attention_score`).
        prefix: sparse_mode 5 and 6, as ``flash_attention_score``.
        padding_mask: not supported yet.
        actual_seq_qlen, actual_seq_kvlen (list of int): TND only: cumulative query / key
            lengths of the packed sequences.

    Outputs:
        Tensor of query's shape and dtype. Gradients flow to query, key and value.
    """

    def __init__(self, head_num, keep_prob=1.0, scale_value=1.0, pre_tokens=2147483647, next_tokens=2147483647,
                 input_layout="BSH", sparse_mode=0, use_alibi_mask=False):
        super().__init__()
        check_int(_NAME, "head_num", head_num, low=1)
        if isinstance(keep_prob, bool) or not isinstance(keep_prob, (int, float)):
            raise TypeError(f"{_NAME}: 'keep_prob' must be a float, got {type(keep_prob).__name__}")
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError(f"{_NAME}: 'keep_prob' must be in (0, 1], got {keep_prob}")
        if scale_value is not None and (isinstance(scale_value, bool) or not isinstance(scale_value, (int, float))):
            raise TypeError(f"{_NAME}: 'scale_value' must be a float or None, got {type(scale_value).__name__}")
        check_int(_NAME, "pre_tokens", pre_tokens)
        check_int(_NAME, "next_tokens", next_tokens)
        check_choice(_NAME, "input_layout", input_layout, _LAYOUTS)
        check_int(_NAME, "sparse_mode", sparse_mode, low=0)
        if not isinstance(use_alibi_mask, bool):
            raise TypeError(f"{_NAME}: 'use_alibi_mask' must be a bool, got {type(use_alibi_mask).__name__}")
        self.head_num = head_num
        self.keep_prob = float(keep_prob)
        self.scale_value = None if scale_value is None else float(scale_value)
        self.pre_tokens = pre_tokens
        self.next_tokens = next_tokens
        self.input_layout = input_layout
        self.sparse_mode = sparse_mode
        self.use_alibi_mask = use_alibi_mask
        self.mode_mask = compressed_mask(sparse_mode) if sparse_mode in COMPRESSED_MASKS else None

    def _scale(self, query):
        if self.scale_value is not None:
            return self.scale_value
        check_tensor(_NAME, "query", query)
        width = query.shape[-1]
        if not known(width):
            raise ValueError(f"{_NAME}: 'scale_value' None needs the query's last dimension at compile time, "
                             f"got shape {query.shape}")
        head_dim = width // self.head_num if self.input_layout in ("BSH", "SBH") else width
        return 1.0 / math.sqrt(head_dim)

    def construct(self, query, key, value, attn_mask=None, alibi_mask=None, prefix=None, padding_mask=None,
                  actual_seq_qlen=None, actual_seq_kvlen=None):
        if self.use_alibi_mask and alibi_mask is None:
            raise ValueError(f"{_NAME}: 'alibi_mask' is required with use_alibi_mask=True")
        if not self.use_alibi_mask and alibi_mask is not None:
            raise ValueError(f"{_NAME}: 'alibi_mask' is given but use_alibi_mask is False")
        if attn_mask is None:
            attn_mask = self.mode_mask
        return flash_attention_score(query, key, value, self.head_num, real_shift=alibi_mask,
                                     padding_mask=padding_mask, attn_mask=attn_mask, prefix=prefix,
                                     actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen,
                                     keep_prob=self.keep_prob, scalar_value=self._scale(query),
                                     pre_tokens=self.pre_tokens, next_tokens=self.next_tokens,
                                     input_layout=self.input_layout, sparse_mode=self.sparse_mode)

    def extend_repr(self):
        return (f"head_num={self.head_num}, keep_prob={self.keep_prob}, scale_value={self.scale_value}, "
                f"pre_tokens={self.pre_tokens}, next_tokens={self.next_tokens}, "
                f"input_layout={self.input_layout}, sparse_mode={self.sparse_mode}, "
                f"use_alibi_mask={self.use_alibi_mask}")
