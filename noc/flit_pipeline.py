"""How Numba compiles the flit-level kernels (``noc.flit``): its standard nopython pipeline,
with two promises those kernels keep made to the compiler.

* **No negative indices.** Numba lowers ``a[i]`` for a signed ``i`` with Python's wrap-around
  (``i + len`` when ``i < 0``): a compare and a select, and a load of the dimension, on
  every index the optimiser cannot prove non-negative, which in these kernels is nearly
  every index (they come out of other arrays: link ids, packet slots, VC numbers). The
  kernels never index with a negative value (-1 marks "none" in several arrays and is
  always tested before use), so for the functions lowered here an index is used as it is.
* **No aliasing.** No two arrays of a :class:`noc.flit.Net` or :class:`noc.flit.State`
  share memory (each is its own allocation), so the array arguments are declared
  ``noalias``: LLVM may keep a loaded value across a store to another array instead of
  loading it again.

Indexing is otherwise Numba's own (the same address arithmetic); results do not change.
Only the functions compiled with :class:`FlitCompiler` are affected, not Numba functions they
call, nor any other code in the process: the index rule is chosen per LLVM function, by name.
Without Numba's internal hook (``numba.np.arrayobj.fix_integer_index``) the kernels
compile with the standard rule (slower, same results).
"""

from __future__ import annotations

from numba.core import lowering, types
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import register_pass
from numba.core.typed_passes import NativeLowering

try:
    import numba.np.arrayobj as _arrayobj

    _standard_fix_index = _arrayobj.fix_integer_index
except (ImportError, AttributeError):  # another Numba: keep its standard indexing
    _arrayobj = None
    _standard_fix_index = None

# LLVM names of the functions lowered by FlitCompiler: their indices are used without wrap-around
_NO_WRAP_FUNCTIONS: set[str] = set()


def _fix_index(context, builder, idxty, idx, size):
    """``numba.np.arrayobj.fix_integer_index``, without the wrap-around in our kernels."""
    if idxty.signed and builder.function.name in _NO_WRAP_FUNCTIONS:
        return context.cast(builder, idx, idxty, types.intp)
    return _standard_fix_index(context, builder, idxty, idx, size)


if _arrayobj is not None and getattr(_arrayobj.fix_integer_index, "__name__", "") != "_fix_index":
    _arrayobj.fix_integer_index = _fix_index


class _Lower(lowering.Lower):
    def __init__(self, context, library, fndesc, func_ir, metadata=None):
        _NO_WRAP_FUNCTIONS.add(fndesc.mangled_name)
        super().__init__(context, library, fndesc, func_ir, metadata)


@register_pass(mutates_CFG=True, analysis_only=False)
class _FlitLowering(NativeLowering):
    _name = "flit_native_lowering"

    @property
    def lowering_class(self):
        return _Lower


class FlitCompiler(CompilerBase):
    """Numba's nopython pipeline, lowering with :class:`_FlitLowering` and ``noalias``
    array arguments (``njit(pipeline_class=FlitCompiler)``)."""

    def define_pipelines(self):
        self.state.flags.noalias = True
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(_FlitLowering if cls is NativeLowering else cls, desc) for cls, desc in pm.passes]
        pm.finalize()
        return [pm]
