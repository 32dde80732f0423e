"""``probe report --format html``: the report as one self-contained HTML page.

The page is meant to be opened in a browser or attached to a bug report: it
holds everything inline (CSS in a ``<style>`` element, no script, no font,
image or link to anything outside the file). It shows what the text report
shows (:class:`~msprobe_lint.report.view.Report`):

* the summary line and the record where the overflow started in a
  highlighted box that links to it;
* per shown step and group of ranks (each group once, with its rank list),
  in execution order, every record with its mark (ORIGIN, carried,
  received, unknown), kind, direction, the user's ``file:line``, what a
  received record got through which collective call, the call a nested
  call was made inside, the Parameters a call wrote inf/nan into, the
  constants an origin was called with, where a carried overflow came in
  (``entered:``) and the statistics of every tensor of its dump.json entry
  (non-finite values marked);
* for a group whose ``construct.json`` is not empty (level L0 or mix), the
  Cell tree it describes, with the path from the top Cell down to that
  group's first origin (else its first record) marked;
* the later steps as one row each (records, folders, ranks), folded in a
  ``<details>`` element, so the page's size does not grow with their
  records; with ``--all`` their records too, each step folded;
* files that could not be read whole.

The page is rendered with Jinja2 (autoescaping on: names and paths from a
dump are data, never markup) from ``templates/report.html.j2`` beside this
module, streamed while the shown steps are read. Jinja2 is imported only
here, and this module only when an HTML report is asked for, so ``probe
lint`` never loads it. The renderer reads no file: the records and
construct.json come read in the report.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from probe_format.layout import STATS

from ..fmt import fmt, no_inf_nan_shown, place, rank_name, record_notes, shape, step_text
from ..model import Record
from ..view import Report, Section, ShownGroup
from . import RenderUnavailable

TEMPLATE = "report.html.j2"


class HtmlUnavailable(RenderUnavailable):
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
class PageGroup:
    """A shown group of ranks with its Cell tree (empty at L1)."""

    group: ShownGroup
    tree: list[CellNode]
    target: Optional[str]
    tree_problem: Optional[str] = None

    @property
    def rows(self) -> list[TreeRow]:
        """The Cell tree in page order (see :func:`tree_rows`)."""
        return tree_rows(self.tree)


def anchor(group: ShownGroup, record: Record) -> str:
    """The page-unique id of a shown record: ``rec-<group number>-<index>``."""
    return f"rec-{group.number}-{record.index}"


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


def _attach(tree: list[CellNode], group: ShownGroup) -> None:
    by_name = {r.name: r for r in group.dump.records}
    stack = list(tree)
    while stack:
        current = stack.pop()
        record = by_name.get(current.name)
        if record is not None:
            current.record = record
            current.anchor = anchor(group, record)
        stack.extend(current.children)


def _page_group(group: ShownGroup) -> PageGroup:
    dump = group.dump
    page = PageGroup(group, [], None, dump.construct_problem)
    if dump.construct and dump.records:
        first = next((r for r in dump.records if r.origin), dump.records[0])
        page.tree = cell_tree(dump.construct, first.name, [r.name for r in dump.records])
        page.target = first.name if _contains(page.tree, first.name) else None
        _attach(page.tree, group)
    return page


def _page_sections(sections: Iterable[Section]) -> Iterator[tuple[Section, list[PageGroup]]]:
    for section in sections:
        yield section, [_page_group(group) for group in section.groups]


def _value_class(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf"
    return ""


def _environment():
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
    env.filters["place"] = place
    env.filters["step"] = step_text
    env.filters["rank_name"] = rank_name
    env.filters["notes"] = record_notes
    env.filters["no_inf_nan_shown"] = no_inf_nan_shown
    env.globals["anchor"] = anchor
    return env


def render_html(report: Report) -> Iterator[str]:
    """The whole page in pieces (UTF-8 text, ``<!DOCTYPE html>`` first),
    rendered while the shown steps are read.

    Raises:
        HtmlUnavailable: Jinja2 is not installed (raised before any piece).
    """
    env = _environment()
    template = env.get_template(TEMPLATE)
    started = report.started
    started_anchor = None
    if started is not None and report.started_group is not None:
        started_anchor = f"rec-{report.started_group}-{started.index}"
    folders = sum(step.folders for step in report.summary.steps)
    try:  # the version from the package metadata (not the package's __init__, which loads the linter)
        from importlib.metadata import PackageNotFoundError, version as installed

        version = installed("msprobe-lint")
    except (ImportError, PackageNotFoundError):  # running from a source tree that is not installed
        version = "unknown version"
    return template.generate(
        report=report, summary=report.summary, sections=_page_sections(report.sections), started=started,
        start=report.summary.start, started_anchor=started_anchor, started_group=report.started_group,
        status=int(report.status), message=report.line, stats=STATS, folders=folders, version=version,
    )
