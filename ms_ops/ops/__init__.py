"""Public functional API of ms_ops."""
from ms_ops.ops.moe_routing import moe_finalize_routing, moe_init_routing

__all__ = ["moe_init_routing", "moe_finalize_routing"]
