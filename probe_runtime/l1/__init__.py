"""L1 (API level): every MindSpore API call, caught and handed to the checker.

While installed, the public functions of ``mindspore.ops``,
``mindspore.mint`` and ``mindspore.mint.nn.functional``, the methods and
operators of ``mindspore.Tensor`` and every Primitive call are wrapped
(entry names ``Functional.exp``, ``Mint.exp``, ``Tensor.__mul__``,
``Primitive.MatMul``); ``uninstall`` puts everything back. Only the
outermost call on a thread is handed on, as an :class:`~.calls.ApiCall`,
to the sink: this package decides nothing about overflow and reads no
values (except a host check of Parameters in a synchronous window). Code
compiled with ``mindspore.jit`` is not seen.

Modules: :mod:`.interceptor` (``ApiInterceptor``: installs and removes
the patches), :mod:`.wrappers` (what runs inside them), :mod:`.calls`
(``ApiCall``, ``Sink``), :mod:`.primitives` (naming Primitive calls),
:mod:`.namespaces` (what is left alone, as data) and :mod:`.optimizer`
(``OptimizerWatch``, used at L0 too). What is patched exactly, why backward
entries use ``ops.HookBackward``, and what it costs:
``docs/runtime-design.md``.

Example::

    interceptor = ApiInterceptor(checker)
    interceptor.install()
    y = ops.exp(x)              # checker.on_forward(ApiCall("Functional.exp", 0, (x,), ...))
    interceptor.uninstall()
"""
