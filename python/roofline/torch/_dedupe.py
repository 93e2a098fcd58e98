"""Trace one of several identical submodules and replay its kernels for the others.

A stack of decoder layers (32 ``Block`` s in a ``ModuleList``) launches the same kernels in
every layer. :class:`Deduper` traces the first layer of each group of identical siblings
(same classes, attributes, parameter / buffer metadata, no hooks, same input metadata) and,
for every later identical layer, appends the first one's forward records under the later
layer's name and stands its backward in for one autograd node whose records are spliced in
once the representative's own backward has run. Whatever cannot be checked before the call
(the representative's backward window, its input gradients' layout) is checked afterwards:
:meth:`Deduper.records` returns None when the replayed run may differ, and the caller then
traces the module in full.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules import module as _module
from torch.utils._pytree import tree_flatten, tree_unflatten

from . import _host

_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.Size)
_INTERNAL = frozenset({
    "training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
    "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
})
_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
#: The attribute HF attention / decoder modules keep their position in the stack in.
_LAYER_INDEX = "layer_idx"
_CACHE_WORDS = ("cache", "past")


def _index_only_for_cache(cls: type) -> bool:
    """True when no method of ``cls`` (its ``__init__`` aside, whose results are attributes of
    their own) reads ``self.layer_idx`` but in an expression that names a cache.

    HF modules keep ``layer_idx`` to index the KV cache they are given
    (``cache.update(k, v, self.layer_idx)``, ``cache.layers[self.layer_idx]``); with no cache
    passed, two layers differing only in it launch the same kernels. A class whose source cannot
    be read, or that uses the index otherwise (``if self.layer_idx == 0``, a scale
    ``1 / (layer_idx + 1)``), keeps the index in the signature.
    """
    if cls not in _INDEX_ONLY_FOR_CACHE:
        _INDEX_ONLY_FOR_CACHE[cls] = _reads_index_for_cache_only(cls)
    return _INDEX_ONLY_FOR_CACHE[cls]


_INDEX_ONLY_FOR_CACHE: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _reads_index_for_cache_only(cls: type) -> bool:
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in ("torch", "builtins"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            return False
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                    fn.name == "__init__":
                continue
            for stmt in ast.walk(fn):
                if not isinstance(stmt, ast.stmt) or isinstance(
                        stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                # each expression directly under a statement (an if's test, an assignment's
                # target or value, a call): the smallest unit that can name the cache
                for _, field in ast.iter_fields(stmt):
                    for expr in field if isinstance(field, list) else [field]:
                        if not isinstance(expr, ast.expr):
                            continue
                        uses = any(isinstance(n, ast.Attribute) and n.attr == _LAYER_INDEX
                                   for n in ast.walk(expr))
                        if uses and not any(w in ast.unparse(expr).lower()
                                            for w in _CACHE_WORDS):
                            return False
    return True


def _value_key(v: Any) -> Any:
    """A hashable key equal for two values only when they provably behave the same."""
    if isinstance(v, _PLAIN):
        return (type(v), v)
    if isinstance(v, (tuple, list, frozenset)):
        return (type(v), tuple(_value_key(x) for x in v))
    return ("id", id(v))


def _tensor_key(t: torch.Tensor) -> tuple[Any, ...]:
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.device, t.requires_grad,
            t.grad_fn is None, t._is_view())


def _is_cache(v: Any) -> bool:
    """An object whose class (or a base) is named like a cache (HF ``Cache``, ``DynamicCache``)."""
    cls = type(v)
    found = _CACHE_CLASSES.get(cls)
    if found is None:
        found = not issubclass(cls, (torch.Tensor, torch.nn.Module, *_PLAIN)) and any(
            "cache" in k.__name__.lower() for k in cls.__mro__)
        _CACHE_CLASSES[cls] = found
    return found


_CACHE_CLASSES: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _renamed(record: Any, module: str) -> Any:
    """A copy of a (frozen dataclass) record under another module name: what
    ``dataclasses.replace(record, module=module)`` makes, without its per-call overhead."""
    out = object.__new__(type(record))
    out.__dict__.update(record.__dict__)
    out.__dict__["module"] = module
    return out


def _with_host(record: Any, host: tuple[float, ...]) -> Any:
    """A copy of a record with other host-call counts (see :mod:`._host`)."""
    out = object.__new__(type(record))
    out.__dict__.update(record.__dict__)
    out.__dict__["host"] = host
    return out


def _slot_key(cache: Any, index: Any) -> Any:
    """The state of ``cache.layers[index]`` (its class, tensor metadata and plain values), the
    slot a layer with this ``layer_idx`` reads and writes; None when not comparable."""
    layers = getattr(cache, "layers", None)
    if (not isinstance(layers, (list, tuple)) or isinstance(index, bool)
            or not isinstance(index, int) or not 0 <= index < len(layers)):
        return None
    slot = layers[index]
    try:
        state = vars(slot)
    except TypeError:
        return None
    items = []
    for k, v in state.items():
        if isinstance(v, torch.Tensor):
            items.append((k, _tensor_key(v)))
        elif isinstance(v, _PLAIN):
            items.append((k, _value_key(v)))
        else:
            return None
    return (type(slot), tuple(sorted(items)))


def _contains(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _rename(name: str, old: str, new: str) -> str:
    return new + name[len(old):]


def _state(parents: frozenset[str], name: str) -> tuple[frozenset[str], bool]:
    """The module tracker's entered modules outside ``name``'s subtree, and whether
    ``name`` itself is entered."""
    return frozenset(p for p in parents if not _contains(p, name)), name in parents


@dataclasses.dataclass
class _Rep:
    """The traced representative of a group of identical calls."""

    module: torch.nn.Module
    name: str
    forward: list[Any]
    out_spec: Any
    out_leaves: list[Any]          # tensor metadata tuples or plain values
    in_grads: list[tuple[Any, ...]]  # (shape, stride, dtype) the replays' input grads have
    members: frozenset[int]        # ids of its modules (a replayed call shares none)
    start: int | None = None       # backward window in the recorder's list (after the run)
    end: int | None = None
    grads_ok: bool = True
    parents: frozenset[str] | None = None  # module tracker's state at its first backward op
    tail: tuple[float, ...] = ()   # host calls after its last forward kernel (see _host)


class _Replay(torch.autograd.Function):
    """One autograd node standing for a replayed module call (forward and backward)."""

    @staticmethod
    def forward(ctx: Any, dd: Any, rep: Any, name: str, n_in: int, *tensors: Any) -> Any:
        ctx.dd, ctx.rep, ctx.name = dd, rep, name
        ctx.metas = [(tuple(t.shape), t.stride(), t.dtype) for t in tensors[:n_in]]
        ctx.n_extra = len(tensors) - n_in
        outs = []
        frozen = []
        for leaf in rep.out_leaves:
            if isinstance(leaf, tuple) and leaf and leaf[0] == "T":
                _, shape, stride, dtype, grad = leaf
                o = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
                outs.append(o)
                if not grad:
                    frozen.append(o)
        if frozen:
            ctx.mark_non_differentiable(*frozen)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        dd = ctx.dd
        dd.pending.append((len(dd.rec.records), ctx.rep, ctx.name,
                           frozenset(dd.tracker.parents)))
        ins = tuple(torch.empty_strided(s, st, dtype=d, device="meta") for s, st, d in ctx.metas)
        return (None, None, None, None, *ins, *([None] * ctx.n_extra))


class Deduper:
    """Replays identical sibling submodules' kernels (see the module docstring)."""

    def __init__(self, root: torch.nn.Module, rec: Any, tracker: Any) -> None:
        self.root = root
        self.rec = rec
        self.tracker = tracker
        self.reps: dict[Any, _Rep | None] = {}
        self.called: set[int] = set()
        self.pending: list[tuple[int, _Rep, str, frozenset[str]]] = []
        self.handles: list[Any] = []
        self.patched_ids: set[int] = set()
        self._param_count: dict[int, int] | None = None
        self._modsig: dict[int, Any] = {}

    # ---------------------------------------------------------------- patching
    @contextmanager
    def patched(self) -> Iterator[None]:
        """Route the calls of every child of a ModuleList / Sequential / ModuleDict here."""
        patched: list[torch.nn.Module] = []
        containers = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)
        try:
            for parent in self.root.modules():
                if not isinstance(parent, containers):
                    continue
                for child in parent.children():
                    if "forward" in vars(child) or child is self.root:
                        continue
                    child.forward = self._wrap(child, child.forward)
                    patched.append(child)
                    self.patched_ids.add(id(child))
            yield
        finally:
            for child in patched:
                vars(child).pop("forward", None)
            for h in self.handles:
                h.remove()

    def _wrap(self, mod: torch.nn.Module, orig: Any) -> Any:
        def forward(*args: Any, **kwargs: Any) -> Any:
            return self._call(mod, orig, args, kwargs)
        return forward

    # ---------------------------------------------------------------- signatures
    def _module_sig(self, subs: list[tuple[str, torch.nn.Module]],
                    caches: list[Any] | None = None) -> Any:
        """Structure, attributes and parameter metadata of a subtree, ``subs`` its
        ``named_modules(remove_duplicate=False)`` (None: not comparable).

        ``caches``: the objects other than tensors and plain values the call passes, when all
        of them are caches (None: some other object). A ``layer_idx`` used only to index a
        cache (:func:`_index_only_for_cache`) is then left out, and the state of the slot it
        indexes in each cache put in instead (:func:`_slot_key`): two layers differing only in
        their index, each given an empty slot of the same cache, launch the same kernels. No
        module of the subtree may hold a cache itself."""
        if self._param_count is None:
            counts: dict[int, int] = {}
            for _, p in self.root.named_parameters(remove_duplicate=False):
                counts[id(p)] = counts.get(id(p), 0) + 1
            for _, b in self.root.named_buffers(remove_duplicate=False):
                counts[id(b)] = counts.get(id(b), 0) + 1
            self._param_count = counts
        items = []
        seen: dict[int, int] = {}
        slots: list[Any] | None = None
        if caches is not None and not any(
                _is_cache(v) for _, sub in subs for v in vars(sub).values()):
            slots = [(rel, _slot_key(c, sub.__dict__[_LAYER_INDEX])) for rel, sub in subs
                     if _LAYER_INDEX in vars(sub) and _index_only_for_cache(type(sub))
                     for c in caches]
            if any(k is None for _, k in slots):
                slots = None
        for rel, sub in subs:
            if any(getattr(sub, h, None) for h in _HOOKS):
                return None
            drop = slots is not None and _index_only_for_cache(type(sub))
            attrs = tuple(sorted((k, _value_key(v)) for k, v in vars(sub).items()
                                 if k not in _INTERNAL
                                 and not (k == "forward" and id(sub) in self.patched_ids)
                                 and not (drop and k == _LAYER_INDEX)))
            tensors: list[tuple[Any, ...]] = []
            for kind, store in (("p", sub._parameters), ("b", sub._buffers)):
                for k, t in store.items():
                    if t is None:
                        tensors.append((kind, k, None))
                        continue
                    first = seen.setdefault(id(t), len(seen))
                    tensors.append((kind, k, first, _tensor_key(t)))
            items.append((rel, type(sub), sub.training, attrs, tuple(tensors)))
        # every parameter / buffer used only inside this subtree
        local: dict[int, int] = {}
        for _, sub in subs:
            for t in (*sub._parameters.values(), *sub._buffers.values()):
                if t is not None:
                    local[id(t)] = local.get(id(t), 0) + 1
        if any(self._param_count.get(k, 0) != v for k, v in local.items()):
            return None
        return tuple(items), tuple(slots or ())

    def _inputs_sig(self, args: Any, kwargs: Any
                    ) -> tuple[Any, list[torch.Tensor], list[Any] | None]:
        """(key, input tensors, the other objects passed when all are caches, else None)."""
        leaves, spec = tree_flatten((args, kwargs))
        keys: list[Any] = []
        ids: dict[int, int] = {}
        tensors = []
        objects = [leaf for leaf in leaves if not isinstance(leaf, (torch.Tensor, *_PLAIN))]
        caches = objects if all(_is_cache(o) for o in objects) else None
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                if id(leaf) in ids:
                    keys.append(("alias", ids[id(leaf)]))
                    continue
                ids[id(leaf)] = len(ids)
                keys.append(("T", _tensor_key(leaf)))
                tensors.append(leaf)
            else:
                keys.append(_value_key(leaf))
        return (str(spec), tuple(keys), torch.is_grad_enabled(),
                torch.is_inference_mode_enabled(), self.rec.phase), tensors, caches

    # ---------------------------------------------------------------- calls
    def _names_ok(self, subs: list[tuple[str, torch.nn.Module]], name: str) -> bool:
        known = self.tracker._known_modules
        return all(known.get(sub) == (f"{name}.{rel}" if rel else name) for rel, sub in subs)

    def _call(self, mod: torch.nn.Module, orig: Any, args: Any, kwargs: Any) -> Any:
        first = id(mod) not in self.called
        self.called.add(id(mod))
        isig = self._inputs_sig(args, kwargs) if first and global_hooks_clear() else None
        if isig is None:
            return orig(*args, **kwargs)
        subs = list(mod.named_modules(remove_duplicate=False))
        msig = self._module_sig(subs, isig[2])
        if msig is None:
            return orig(*args, **kwargs)
        key = (msig, isig[0])
        name = self.tracker._known_modules.get(mod)
        if key in self.reps:
            rep = self.reps[key]
            if (rep is not None and name is not None and self._names_ok(subs, name)
                    and rep.members.isdisjoint(id(m) for _, m in subs)):
                return self._replay(mod, rep, name, isig[1])
            return orig(*args, **kwargs)
        start = len(self.rec.records)
        pending = len(self.pending)
        # the host calls before the call go with its first kernel but not into its replays
        before, self.rec.pending = self.rec.pending, _host.NONE
        out = orig(*args, **kwargs)
        tail = self.rec.pending
        rep = self._representative(mod, subs, name, out, isig[1], start, pending)
        if rep is not None:
            rep.tail = tail
        records = self.rec.records
        if len(records) > start:
            records[start] = _with_host(records[start], _host.plus(before, records[start].host))
        else:
            self.rec.pending = _host.plus(before, tail)
        self.reps[key] = rep
        return out

    def _representative(self, mod: torch.nn.Module, subs: list[tuple[str, torch.nn.Module]],
                        name: str | None, out: Any, ins: list[torch.Tensor], start: int,
                        pending: int) -> _Rep | None:
        if name is None or not self._names_ok(subs, name) or len(self.pending) != pending:
            return None
        fwd = self.rec.records[start:]
        if not all(_contains(r.module, name) for r in fwd):
            return None
        leaves, spec = tree_flatten(out)
        in_ids = {id(t) for t in ins}
        metas: list[Any] = []
        outs = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                if id(leaf) in in_ids or leaf._is_view() or leaf.device.type != "meta":
                    return None
                metas.append(("T", tuple(leaf.shape), leaf.stride(), leaf.dtype,
                              leaf.requires_grad))
                outs.append(leaf)
            elif isinstance(leaf, _PLAIN):
                metas.append(leaf)
            else:
                return None
        if len({id(t) for t in outs}) != len(outs):
            return None
        diff_in = [t for t in ins if t.requires_grad]
        diff_out = [t for t in outs if t.requires_grad]
        if diff_out and not diff_in or any(t.grad_fn is None for t in diff_out):
            return None  # nothing to delimit the backward window with
        rep = _Rep(mod, name, list(fwd), spec, metas,
                   [(tuple(t.shape), t.stride(), t.dtype) for t in diff_in],
                   frozenset(id(m) for _, m in subs))
        if diff_out:
            def snapshot() -> None:
                rep.parents = frozenset(self.tracker.parents)
                self.rec.before_record = None

            def began(*_: Any) -> None:
                if rep.start is None:
                    rep.start = len(self.rec.records)
                    # the tracker's own hooks on these outputs may run after this one:
                    # take its state when the first kernel of the window is recorded
                    self.rec.before_record = snapshot

            def ended(grads: Any) -> None:
                rep.end = len(self.rec.records)
                got = [None if g is None else (tuple(g.shape), g.stride(), g.dtype)
                       for g in grads]
                rep.grads_ok = got == rep.in_grads

            # right before the first of the outputs' nodes runs (after their incoming
            # gradients are summed, which the replay node's inputs are too)
            nodes = {id(t.grad_fn): t.grad_fn for t in diff_out if t.grad_fn is not None}
            for node in nodes.values():
                self.handles.append(node.register_prehook(began))
            self.handles.append(register_multi_grad_hook(diff_in, ended))
        return rep

    def _replay(self, mod: torch.nn.Module, rep: _Rep, name: str,
                ins: list[torch.Tensor]) -> Any:
        before = self.rec.pending
        for i, r in enumerate(rep.forward):
            r = _renamed(r, _rename(r.module, rep.name, name))
            self.rec.records.append(_with_host(r, _host.plus(before, r.host)) if i == 0 else r)
        self.rec.pending = rep.tail if rep.forward else _host.plus(before, rep.tail)
        self.rec.counting = False  # the replay node's own tensors are no calls of the layer
        try:
            return self._replay_outputs(rep, name, ins)
        finally:
            self.rec.counting = True

    def _replay_outputs(self, rep: _Rep, name: str, ins: list[torch.Tensor]) -> Any:
        diff_in = [t for t in ins if t.requires_grad]
        needs_grad = any(isinstance(m, tuple) and m and m[0] == "T" and m[4]
                         for m in rep.out_leaves)
        if needs_grad and torch.is_grad_enabled():
            outs = _Replay.apply(self, rep, name, len(diff_in), *diff_in)  # type: ignore[no-untyped-call]
        else:
            with torch.no_grad():
                outs = _Replay.apply(self, rep, name, 0)  # type: ignore[no-untyped-call]
        it = iter(outs)
        leaves = [next(it) if isinstance(m, tuple) and m and m[0] == "T" else m
                  for m in rep.out_leaves]
        return tree_unflatten(leaves, rep.out_spec)

    # ---------------------------------------------------------------- result
    def records(self, records: list[Any]) -> list[Any] | None:
        """The full run's records with every replayed backward spliced in (None: not
        provably identical, trace in full)."""
        if not self.pending:
            return records
        holes = {i for i, _, _, _ in self.pending}
        bwd_start = next((i for i, r in enumerate(records) if r.phase == "backward"),
                         len(records))
        windows: dict[int, list[Any]] = {}
        for _, rep, name, parents in self.pending:
            # the tracker in the same state when the replayed layer's backward starts as
            # when the representative's did (the same modules outside the layer entered, the
            # layer itself entered or not; the layer's own hooks then run alike): its
            # kernels get the same, renamed, modules
            if rep.start != rep.end and (rep.parents is None or _state(parents, name)
                                         != _state(rep.parents, rep.name)):
                return None
            if id(rep) in windows:
                continue
            if rep.start is None or rep.end is None or not rep.grads_ok:
                return None
            if any(rep.start < i < rep.end for i in holes):
                return None
            win = records[rep.start:rep.end]
            if not all(_contains(r.module, rep.name) and r.phase == "backward" for r in win):
                return None
            # no record of the representative outside its window in the backward
            if any(_contains(r.module, rep.name) for i, r in enumerate(records)
                   if i >= bwd_start and not rep.start <= i < rep.end):
                return None
            windows[id(rep)] = win
        # a kernel recorded (not replayed) under a replayed layer's name: its inputs' gradients
        # were summed with others outside it, say, which the representative's window holds too
        dups = {name for _, _, name, _ in self.pending}
        for r in records[bwd_start:]:
            parts = r.module.split(".")
            if any(".".join(parts[:k]) in dups for k in range(1, len(parts) + 1)):
                return None
        out: list[Any] = []
        at = 0
        for i, rep, name, _ in sorted(self.pending, key=lambda p: p[0]):
            out.extend(records[at:i])
            at = i
            out.extend(_renamed(r, _rename(r.module, rep.name, name))
                       for r in windows[id(rep)])
        out.extend(records[at:])
        return out


def global_hooks_clear() -> bool:
    """True when no module hooks are registered globally besides one forward pre / post
    pair (the ModuleTracker's)."""
    return (len(_module._global_forward_hooks) <= 1
            and len(_module._global_forward_pre_hooks) <= 1
            and not _module._global_backward_hooks
            and not _module._global_backward_pre_hooks)
