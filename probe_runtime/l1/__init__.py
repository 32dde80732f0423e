"""L1 (API level): every MindSpore API call, caught and handed to the checker.

Modules: :mod:`.interceptor` (installs and removes the patches),
:mod:`.wrappers` (what runs inside them), :mod:`.calls` (``ApiCall``,
``Sink``), :mod:`.primitives` (naming Primitive calls), :mod:`.namespaces`
(what is left alone, as data) and :mod:`.optimizer` (``OptimizerWatch``,
used at L0 too).

What is patched while installed (everything is put back by
:meth:`ApiInterceptor.uninstall`):

* the public functions of ``mindspore.ops`` (``Functional.<name>``),
  ``mindspore.mint`` (``Mint.<name>``) and ``mindspore.mint.nn.functional``
  (``MintFunctional.<name>``). One function object can sit in several
  namespaces (``ops.exp is mint.exp``); each namespace gets its own wrapper,
  so the name says which one the user called;
* the public methods and the arithmetic/indexing operators of
  ``mindspore.Tensor`` (``Tensor.<name>``), set on the Python class, so
  ``a * b`` is seen as ``Tensor.__mul__``;
* every Primitive call (``Primitive.<Class>``), caught where it runs: the
  generated ``pyboost_<op>`` functions and ``_run_op`` in the module globals
  that call them, plus ``__call__`` of the few classes that run neither
  (see :meth:`ApiInterceptor._patch_primitives`): this is what sees the
  primitives inside ``nn.Dense``, ``nn.ReLU``, ``nn.Softmax``,
  ``nn.LayerNorm`` and calls made through names imported before
  ``install()``.

A re-entrancy guard (per thread) lets only the outermost intercepted call
be handed on: ``ops.exp`` calling the ``Exp`` primitive, ``__rmul__``
calling ``mul`` and the tool's own operations are not seen. Code compiled
by ``mindspore.jit`` runs as a graph and is not seen; while a jit function
is being traced the wrappers pass straight through.

Backward: when MindSpore is recording for a gradient
(``_pynative_executor.grad_flag()``), the positional tensor inputs of a
call (not of in-place calls) are passed through one ``ops.HookBackward``,
whose hook receives the gradients with respect to those inputs (this API's
own contribution), and the tensor outputs through a second one, for the
gradients with respect to the outputs (the caller gets the second one's
outputs). Both hooks return None, so gradients are unchanged; they only
keep references (see ``monitor.py`` for when those are checked).

Not ``Tensor.register_hook`` (about 10 us against 80-170 us a hook, even on
a zero-copy view of each input for the call's own contribution): tried and
dropped, because a tensor carrying a Python hook breaks ``mindspore.jit``
functions it flows into, hooks on tensors that need no gradient raise,
views of inputs lose in-place updates made through them and change the
order gradients are summed in (last-bit differences), and second-order
gradients came out zero. ``HookBackward`` keeps the hook in the autograd
graph, not on the tensor the user gets.

Cost: each ``HookBackward`` makes MindSpore drain its asynchronous
PyNative pipeline in the forward pass (measured 1.6-1.8 ms per hook on the
2 benchmark cores), which is why checked windows run synchronously on CPU
(``execution.py``); synchronously it costs 80-170 us, forward and backward.
With the host checks (``monitor.py``) the hooks are most of what L1 costs
(``benchmarks/README.md``). Patching itself is cheap: two module class
swaps, about 400 attributes of ``Tensor``, ~600 module globals and 90
Primitive classes (about 1.2 ms per ``start()``/``stop()`` pair).
Parameters among a call's inputs are judged on their values at first use in
a window: a float32 sum launched (no wait), or in a synchronous window a
host check at once, held by the call (``ApiCall.param_sums``).

This module only catches calls and hands tensors on to a sink (see
:class:`Sink`); it decides nothing about overflow and reads no values
(except that host check of Parameters).
"""
