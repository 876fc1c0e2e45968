"""Gradient wiring of the ms_ops forward ops (installed as ``ms_ops.bprop``).

Each module holds, per forward op, a factory ``make_<op>_bprop(**attrs)`` returning
``bprop(*inputs, out, dout)`` that yields one gradient per forward input, in input order, built
only from ms_ops gradient kernels and MindSpore built-ins.
"""
