"""``probe report --format html``: the report as one self-contained HTML page.

The page is meant to be opened in a browser or attached to a bug report: it
holds everything inline (CSS in a ``<style>`` element, no script, no font,
image or link to anything outside the file). It shows, from the same
:class:`~msprobe_lint.report.model.Dump` the text report reads:

* the summary line and the first origin (earliest step, lowest rank) in a
  highlighted box that links to its record;
* per step and rank, in execution order, every record with its mark
  (ORIGIN, carried, unknown), kind, direction, the user's ``file:line``,
  where a carried overflow came in (``entered:``, as the text report says)
  and the statistics of every tensor of its dump.json entry (non-finite
  values marked);
* for a folder whose ``construct.json`` is not empty (level L0 or mix), the
  Cell tree it describes, with the path from the top Cell down to that
  folder's first origin (else its first record) marked;
* files that could not be read whole.

The page is rendered with Jinja2 (autoescaping on: names and paths from a
dump are data, never markup) from ``templates/report.html.j2`` beside this
module. Jinja2 is imported only here, and this module only when an HTML
report is asked for, so ``probe lint`` never loads it. The renderer reads no
file: construct.json comes read with the dump.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from ... import __version__
from ..analysis.first import started as started_record
from ..analysis.first import summary_line
from ..dumpformat import STATS
from ..fmt import fmt, place, shape
from ..model import Dump, Record

TEMPLATE = "report.html.j2"


class HtmlUnavailable(RuntimeError):
    """Jinja2 (needed for the HTML report) is not installed."""


@dataclass
class CellNode:
    """One node of a folder's Cell tree (a construct.json key or a parent
    named only as a value)."""

    name: str
    children: list["CellNode"] = field(default_factory=list)
    on_path: bool = False
    target: bool = False
    record: Optional[Record] = None
    anchor: Optional[str] = None


@dataclass
class TreeRow:
    """One node of a Cell tree as a row of the page: the template draws the
    tree from these rows in a loop, as nested lists, with no recursion (a
    Cell tree can be deeper than Jinja's, or Python's, recursion limit)."""

    node: CellNode
    depth: int
    #: how many enclosing lists end after this node (its ancestors' whose
    #: last descendant it is); 0 for a node with children
    closes: int


@dataclass
class Group:
    """The records of one step and rank folder, with its Cell tree."""

    place: str
    folder: str
    records: list[Record]
    tree: list[CellNode]
    target: Optional[str]
    tree_problem: Optional[str] = None

    @property
    def rows(self) -> list[TreeRow]:
        """The Cell tree in page order (see :func:`tree_rows`)."""
        return tree_rows(self.tree)


def _anchors(dump: Dump) -> dict[int, str]:
    """A page-unique id per record (``id(record)`` -> ``rec-<n>``, n its
    position in execution order: a step and rank can have two folders,
    ``graph/`` and ``pynative/``)."""
    return {id(record): f"rec-{n}" for n, record in enumerate(dump.records)}


_BACKWARD_INDEX = re.compile(r"^(?P<cell>.+)\.backward\.(?P<n>\d+)$")


def cell_tree(construct: dict, target: Optional[str], names: Iterable[str] = ()) -> list[CellNode]:
    """The Cell tree of a construct.json parent map (``{entry: parent entry
    or null}``, msprobe's layout), top Cells first, children in file order.

    ``names`` are further entries to place: a ``<Cell>.parameters_grad``
    entry, which construct.json does not list (msprobe's layout), goes under
    ``<Cell>.backward.<highest n>`` when construct.json has one, as msprobe's
    graph builder places it. ``target`` (an entry name) and its ancestors are
    marked ``on_path``; a cycle in the map (malformed file) is cut where it
    closes.
    """
    nodes: dict[str, CellNode] = {}

    def node(name: str) -> CellNode:
        if name not in nodes:
            nodes[name] = CellNode(name)
        return nodes[name]

    parents: dict[str, Optional[str]] = {}
    for name, parent in construct.items():
        parents[str(name)] = str(parent) if isinstance(parent, str) and parent else None
        node(str(name))
    latest_backward: dict[str, tuple[int, str]] = {}
    for name in parents:
        match = _BACKWARD_INDEX.match(name)
        if match and int(match.group("n")) >= latest_backward.get(match.group("cell"), (-1, ""))[0]:
            latest_backward[match.group("cell")] = (int(match.group("n")), name)
    for name in names:
        if name not in parents and name.endswith(".parameters_grad"):
            owner = latest_backward.get(name[: -len(".parameters_grad")])
            if owner is not None:
                parents[name] = owner[1]
                node(name)
    roots: list[CellNode] = []
    for name, parent in parents.items():
        if parent is None or parent == name or _reaches(parents, parent, name):
            roots.append(nodes[name])
        else:
            node(parent).children.append(nodes[name])
    for name in list(nodes):
        if name not in parents and nodes[name] not in roots:  # a parent named only as a value
            roots.append(nodes[name])
    if target in nodes:
        nodes[target].target = True
        seen: set[str] = set()
        current: Optional[str] = target
        while current is not None and current not in seen:
            seen.add(current)
            if current in nodes:
                nodes[current].on_path = True
            current = parents.get(current)
    return roots


def tree_rows(roots: list[CellNode]) -> list[TreeRow]:
    """The nodes of a Cell tree in document order (a node, then its
    children's subtrees), each with its depth and how many lists close
    after it, walked with a stack instead of recursion."""
    rows: list[TreeRow] = []
    stack: list[tuple[CellNode, int, int]] = [(node, 0, 0) for node in reversed(roots)]
    while stack:
        node, depth, ends = stack.pop()
        rows.append(TreeRow(node, depth, 0 if node.children else ends))
        last = len(node.children) - 1
        for i in range(last, -1, -1):  # pushed last first, so popped in file order
            stack.append((node.children[i], depth + 1, ends + 1 if i == last else 0))
    return rows


def _reaches(parents: dict, start: str, goal: str) -> bool:
    """True when following parents from ``start`` comes back to ``goal`` (a cycle)."""
    seen: set[str] = set()
    current: Optional[str] = start
    while current is not None and current not in seen:
        if current == goal:
            return True
        seen.add(current)
        current = parents.get(current)
    return False


def _contains(tree: list[CellNode], name: str) -> bool:
    stack = list(tree)
    while stack:
        current = stack.pop()
        if current.name == name:
            return True
        stack.extend(current.children)
    return False


def _attach(tree: list[CellNode], records: list[Record], anchors: dict[int, str]) -> None:
    by_name = {r.name: r for r in records}
    stack = list(tree)
    while stack:
        current = stack.pop()
        record = by_name.get(current.name)
        if record is not None:
            current.record = record
            current.anchor = anchors[id(record)]
        stack.extend(current.children)


def _groups(dump: Dump, anchors: dict[int, str]) -> list[Group]:
    groups: list[Group] = []
    for record in dump.records:
        here = place(record)
        if not groups or groups[-1].place != here or groups[-1].folder != record.folder:
            groups.append(Group(here, record.folder, [], [], None))
        groups[-1].records.append(record)
    for group in groups:
        construct, problem = dump.constructs.get(group.folder, (None, None))
        if problem is not None:
            group.tree_problem = problem
            continue
        if not construct:
            continue  # level L1: no Cell tree
        first = next((r for r in group.records if r.origin), group.records[0])
        group.tree = cell_tree(construct, first.name, [r.name for r in group.records])
        group.target = first.name if _contains(group.tree, first.name) else None
        _attach(group.tree, group.records, anchors)
    return groups


def _value_class(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf"
    return ""


def _environment(anchors: dict[int, str]):
    try:
        import jinja2
    except ImportError:
        raise HtmlUnavailable("the HTML report needs Jinja2, which is not installed: "
                              "pip install 'jinja2>=3.1'") from None
    env = jinja2.Environment(loader=jinja2.PackageLoader("msprobe_lint.report.render", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt
    env.filters["shape"] = shape
    env.filters["value_class"] = _value_class
    env.filters["anchor"] = lambda record: anchors[id(record)]
    env.filters["place"] = place
    return env


def render_html(dump: Dump, status: int, message: Optional[str] = None) -> str:
    """The whole page as a string (UTF-8 text, ``<!DOCTYPE html>`` first).

    Args:
        dump: what :func:`msprobe_lint.report.command.read_dump` read (with ``construct``).
        status: the report's exit status (0 records shown, 1 none, 2 unreadable).
        message: the reason when nothing could be shown.

    Raises:
        HtmlUnavailable: Jinja2 is not installed.
    """
    anchors = _anchors(dump)
    env = _environment(anchors)
    started = started_record(dump.records)
    groups = _groups(dump, anchors)
    return env.get_template(TEMPLATE).render(
        dump=dump, groups=groups, started=started, status=status,
        message=message or summary_line(dump), stats=STATS,
        folders=len(groups), version=__version__,
    )
