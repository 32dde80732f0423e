"""A quick yes/no JSON Schema check, so a valid config never pays for
importing and building jsonschema.

Most configs a linter sees are valid, and for them importing jsonschema
(with its format checkers and referencing registry) and compiling the
validator costs more than everything else ``probe lint`` does. This module
compiles the schema, once per process, into plain Python predicates for
the keywords the project's schema uses (type with the strict integer of
SPEC section 3, enum, const, required, properties, additionalProperties,
items, contains, anyOf/allOf/oneOf, not, if/then/else, minimum/maximum and
their exclusive forms, min/max items and length, pattern, local ``$ref``)
and answers one question: is the instance valid?

Only a ``True`` answer is acted on (rules/schema.py then skips jsonschema,
which would have found nothing); on ``False`` jsonschema runs as before and
produces the findings. A schema holding any keyword not listed here is not
compiled at all (:func:`is_valid` returns None, and jsonschema always
runs), so the answer is never a guess. tests/lint/test_schema_fast.py checks the
predicates against jsonschema on every shared case and many variants.
"""
from __future__ import annotations

import re
from functools import lru_cache

TYPE_CHECKING = False  # typing is imported only by type checkers (start-up)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

    Check = Callable[[Any], bool]

# Keywords that never make an instance invalid (annotations).
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "definitions", "title", "description",
                         "markdownDescription", "default", "examples", "deprecated", "readOnly", "writeOnly",
                         "then", "else"})  # then/else only act through "if", as in jsonschema


class Unsupported(Exception):
    """The schema uses a keyword this module does not evaluate."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": _is_int,  # strict, as rules/schema.py's type checker: no 3.0, no true
    "number": _is_number,
}


def _every(checks: list[Check]) -> Check:
    """The check passing when every one of ``checks`` passes, in order.
    Written out for one, two or three (no generator per call: a list of
    600,000 rank entries runs it for each)."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    if len(checks) == 3:
        first, second, third = checks
        return lambda v: first(v) and second(v) and third(v)

    def every(v: Any) -> bool:
        for check in checks:
            if not check(v):
                return False
        return True

    return every


def _some(checks: list[Check]) -> Check:
    """The check passing when one of ``checks`` passes (as :func:`_every`)."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) or second(v)
    if len(checks) == 3:
        first, second, third = checks
        return lambda v: first(v) or second(v) or third(v)
    return lambda v: any(check(v) for check in checks)


def equal(one: Any, two: Any) -> bool:
    """JSON equality as jsonschema's ``enum``/``const`` see it: ``true`` is
    not 1, ``1.0`` is 1, containers compare item by item."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, bool) or isinstance(two, bool):
        return False  # `one is two` already matched equal booleans
    if isinstance(one, (list, dict)) or isinstance(two, (list, dict)):
        return False
    return bool(one == two)


class _Compiler:
    def __init__(self, root: dict):
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, ref: str) -> Check:
        if not ref.startswith("#"):
            raise Unsupported(f"$ref {ref}")
        if ref not in self.refs:
            cell: list[Check] = []
            self.refs[ref] = lambda v: cell[0](v)  # placeholder for recursive schemas
            target: Any = self.root
            for token in ref[1:].lstrip("/").split("/") if ref != "#" else []:
                token = token.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or token not in target:
                    raise Unsupported(f"$ref {ref} does not resolve")
                target = target[token]
            cell.append(self.compile(target))
        return self.refs[ref]

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        checks: list[Check] = []
        for keyword, value in schema.items():
            if keyword in ANNOTATIONS or keyword.startswith("x-"):
                continue
            maker = getattr(self, "k_" + keyword.lstrip("$"), None)
            if maker is None:
                raise Unsupported(keyword)
            checks.append(maker(value, schema))
        if not checks:
            return lambda v: True
        return _every(checks)

    # One method per keyword: (keyword value, whole schema) -> Check.
    def k_ref(self, value: Any, schema: dict) -> Check:
        return self.ref(value)

    def k_type(self, value: Any, schema: dict) -> Check:
        names = value if isinstance(value, list) else [value]
        tests = [TYPES[name] for name in names if name in TYPES]
        if len(tests) != len(names):
            raise Unsupported(f"type {value!r}")
        return _some(tests)

    def k_enum(self, value: Any, schema: dict) -> Check:
        if not isinstance(value, list):
            raise Unsupported("enum")
        strings = frozenset(item for item in value if isinstance(item, str))
        others = [item for item in value if not isinstance(item, str)]
        return lambda v: (v in strings) if isinstance(v, str) else any(equal(v, item) for item in others)

    def k_const(self, value: Any, schema: dict) -> Check:
        return lambda v: equal(v, value)

    def k_required(self, value: Any, schema: dict) -> Check:
        keys = tuple(value)
        return lambda v: not isinstance(v, dict) or all(key in v for key in keys)

    def k_properties(self, value: Any, schema: dict) -> Check:
        subs = {key: self.compile(sub) for key, sub in value.items()}

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for key, item in v.items():
                sub = subs.get(key)
                if sub is not None and not sub(item):
                    return False
            return True

        return check

    def k_additionalProperties(self, value: Any, schema: dict) -> Check:
        if "patternProperties" in schema:
            raise Unsupported("patternProperties")
        known = frozenset(schema.get("properties", {}))
        extra = self.compile(value)
        return lambda v: not isinstance(v, dict) or all(extra(v[k]) for k in v if k not in known)

    def k_items(self, value: Any, schema: dict) -> Check:
        if "prefixItems" in schema or isinstance(value, list):
            raise Unsupported("prefixItems")
        sub = self.compile(value)
        return lambda v: not isinstance(v, list) or all(map(sub, v))  # map: no generator frame per item

    def k_contains(self, value: Any, schema: dict) -> Check:
        if "minContains" in schema or "maxContains" in schema:
            raise Unsupported("minContains")
        sub = self.compile(value)
        return lambda v: not isinstance(v, list) or any(sub(item) for item in v)

    def k_anyOf(self, value: Any, schema: dict) -> Check:
        return _some([self.compile(sub) for sub in value])

    def k_allOf(self, value: Any, schema: dict) -> Check:
        return _every([self.compile(sub) for sub in value])

    def k_oneOf(self, value: Any, schema: dict) -> Check:
        subs = [self.compile(sub) for sub in value]
        return lambda v: sum(1 for sub in subs if sub(v)) == 1

    def k_not(self, value: Any, schema: dict) -> Check:
        sub = self.compile(value)
        return lambda v: not sub(v)

    def k_if(self, value: Any, schema: dict) -> Check:
        test = self.compile(value)
        then = self.compile(schema.get("then", True))
        otherwise = self.compile(schema.get("else", True))
        return lambda v: then(v) if test(v) else otherwise(v)

    def _number(self, value: Any, passes: Callable[[Any, Any], bool]) -> Check:
        if not _is_number(value):
            raise Unsupported("numeric bound")
        return lambda v: not _is_number(v) or passes(v, value)

    def k_minimum(self, value: Any, schema: dict) -> Check:
        return self._number(value, lambda v, bound: not v < bound)

    def k_maximum(self, value: Any, schema: dict) -> Check:
        return self._number(value, lambda v, bound: not v > bound)

    def k_exclusiveMinimum(self, value: Any, schema: dict) -> Check:
        return self._number(value, lambda v, bound: not v <= bound)

    def k_exclusiveMaximum(self, value: Any, schema: dict) -> Check:
        return self._number(value, lambda v, bound: not v >= bound)

    def k_minItems(self, value: Any, schema: dict) -> Check:
        return lambda v: not isinstance(v, list) or len(v) >= value

    def k_maxItems(self, value: Any, schema: dict) -> Check:
        return lambda v: not isinstance(v, list) or len(v) <= value

    def k_minLength(self, value: Any, schema: dict) -> Check:
        return lambda v: not isinstance(v, str) or len(v) >= value

    def k_maxLength(self, value: Any, schema: dict) -> Check:
        return lambda v: not isinstance(v, str) or len(v) <= value

    def k_pattern(self, value: Any, schema: dict) -> Check:
        search = re.compile(value).search
        return lambda v: not isinstance(v, str) or search(v) is not None


@lru_cache(maxsize=None)
def _compiled(profile: str = "8.3") -> Optional[Check]:
    from .files import load_schema

    try:
        return _Compiler(load_schema(profile)).compile(load_schema(profile))
    except (Unsupported, re.error, TypeError, AttributeError):
        return None


def is_valid(instance: Any, profile: str = "8.3") -> Optional[bool]:
    """True when ``instance`` is valid under the schema of release
    ``profile``, False when it is not, None when the schema uses a keyword
    this module does not evaluate (ask jsonschema)."""
    check = _compiled(profile)
    if check is None:
        return None
    try:
        return check(instance)
    except RecursionError:
        return None


def fits(value: Any, subschema: Any, profile: str = "8.3") -> Optional[bool]:
    """True when ``value`` is valid under ``subschema``, a part of the
    schema of ``profile`` (its local ``$ref`` resolved against that whole
    schema), False when not, None when it cannot be told here (a keyword
    this module does not evaluate)."""
    from .files import load_schema

    try:
        return _Compiler(load_schema(profile)).compile(subschema)(value)
    except (Unsupported, re.error, TypeError, AttributeError, RecursionError):
        return None
