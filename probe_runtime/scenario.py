"""Which scenario this process runs: MindSpore, or PyTorch code on MindSpore.

MSAdapter is PyTorch-style code (``import torch``, ``nn.Module``,
``torch.nn.functional``) running on MindSpore through a layer that takes
the name ``torch``. msprobe tells the two apart the way :func:`detect`
does: the scenario is MSAdapter when a module named ``torch`` is loaded and
``torch.tensor(0.0)`` is a ``mindspore.Tensor`` (real PyTorch beside
MindSpore makes its own tensors and leaves the scenario MindSpore). msprobe
decides once, when it is imported; :func:`detect` decides once per process
too, at the first ``PrecisionDebugger`` (the gate asks it), so
``import torch`` must come before the debugger is built, as with msprobe.

The layers probe_runtime knows how to check are listed in :data:`CHECKED`
(the layer's package, the distribution that installs it, its version, the
MindSpore release it runs on) with the levels checked on each; any other
torch-on-MindSpore layer, version or level gets :attr:`Scenario.problem`,
and the gate refuses to start with it: the runtime never checks a layer it
does not understand as if it were plain MindSpore, which would end in a
false "no overflow found" (issue #36).

Example::

    import mindtorch, torch
    scenario = detect()
    scenario.framework        # "msadapter"
    scenario.layer            # "mindtorch 0.5.1 (mindnlp) on MindSpore 2.7.0"
    scenario.problem("L1")    # None when L1 is checked there, else why not
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

#: framework names as the lint's context spells them (``--framework``)
MINDSPORE, MSADAPTER = "mindspore", "msadapter"
#: (layer package, distribution, its version, MindSpore release) -> the
#: levels probe_runtime checks there. mindnlp 0.5.1's mindtorch imports
#: only on MindSpore 2.7.0 (tools/make-msadapter-env.sh).
CHECKED: dict[tuple[str, str, str, str], tuple[str, ...]] = {
    ("mindtorch", "mindnlp", "0.5.1", "2.7.0"): ("L1", "L0"),
}
#: what the refusal suggests instead
INSTEAD = ("use mindstudio-probe 8.3 (msprobe's MSAdapter overflow check) for this model, or run it on "
           "MindSpore's own API (mindspore.nn.Cell, mindspore.ops), which probe_runtime checks")


@dataclass(frozen=True)
class Scenario:
    """What :func:`detect` found.

    Attributes:
        framework: ``"mindspore"`` or ``"msadapter"`` (the lint's names).
        package: the package behind ``torch`` (``"mindtorch"``), None for
            plain MindSpore.
        distribution, version: the installed distribution that carries it
            and its version (``"mindnlp"``, ``"0.5.1"``), None when unknown.
        mindspore_version: ``mindspore.__version__``.
        how: how it was decided, for messages.
        levels: the levels probe_runtime checks on this layer (empty for
            a layer it does not know).
        folder: the layer package's folder (its frames are not the
            user's: ``where`` names the user's line that called into it).
    """

    framework: str
    package: Optional[str] = None
    distribution: Optional[str] = None
    version: Optional[str] = None
    mindspore_version: Optional[str] = None
    how: str = "no module named torch is loaded"
    levels: tuple[str, ...] = field(default=())
    folder: Optional[str] = None

    @property
    def adapter(self) -> bool:
        """PyTorch code runs on MindSpore (framework ``msadapter``)."""
        return self.framework == MSADAPTER

    @property
    def dump_framework(self) -> str:
        """dump.json's ``framework``, as msprobe writes it: ``"mindtorch"``
        for PyTorch code on MindSpore, else ``"mindspore"``."""
        return "mindtorch" if self.framework == MSADAPTER else "mindspore"

    @property
    def roots(self) -> tuple[str, ...]:
        """Folders whose frames are the layer's, not the user's."""
        return (self.folder,) if self.framework == MSADAPTER and self.folder else ()

    @property
    def layer(self) -> Optional[str]:
        """``"mindtorch 0.5.1 (mindnlp) on MindSpore 2.7.0"``; None for plain MindSpore."""
        if self.framework != MSADAPTER:
            return None
        name = self.package or "an unknown torch module"
        if self.distribution and self.version:
            name += f" {self.version} ({self.distribution})" if self.distribution != self.package \
                else f" {self.version}"
        return f"{name} on MindSpore {self.mindspore_version or '(unknown version)'}"

    def problem(self, level: Optional[str]) -> Optional[str]:
        """Why probe_runtime cannot check ``level`` here, or None when it
        can (always None for plain MindSpore)."""
        if self.framework != MSADAPTER:
            return None
        if level in self.levels:
            return None
        what = (f"PyTorch code runs on MindSpore here (MSAdapter: torch is {self.layer}; {self.how})")
        if not self.levels:
            known = ", ".join(f"{p} {v} ({d}) on MindSpore {m}" for (p, d, v, m), lv in CHECKED.items() if lv)
            why = ("probe_runtime does not check this layer" + (f" (it checks {known})" if known else " yet"))
        else:
            why = f"probe_runtime checks it at level {' and '.join(self.levels)} only, not {level}"
        return (f"{what}, and {why}: checked as plain MindSpore, its overflows would go unseen and the run "
                f"would end in a false \"no overflow found\"")


_DETECTED: Optional[Scenario] = None


def imported_late() -> Optional[str]:
    """What to tell a user whose torch-on-MindSpore layer was imported
    after the debugger was built for plain MindSpore (it would check
    PyTorch code as MindSpore code; msprobe decides once too, at its
    import), or None when the ``torch`` now loaded is not such a layer.
    Decides the scenario again (:func:`detect`)."""
    scenario = detect(refresh=True)
    if scenario.framework != MSADAPTER:
        return None
    return (f"PyTorch code runs on MindSpore here (torch is {scenario.layer}), but torch was imported after "
            "PrecisionDebugger was built, which set it up for plain MindSpore: import torch (and mindtorch) "
            "before building the debugger")


def detect(refresh: bool = False) -> Scenario:
    """The scenario of this process, decided once (``refresh`` decides
    again). Never raises: what cannot be read stays unknown, and a
    ``torch`` module that is not PyTorch but cannot be identified is an
    MSAdapter layer probe_runtime does not know."""
    global _DETECTED
    if _DETECTED is None or refresh:
        _DETECTED = _detect()
    return _DETECTED


def _detect() -> Scenario:
    torch = sys.modules.get("torch")
    mindspore = sys.modules.get("mindspore")
    ms_version = str(getattr(mindspore, "__version__", "")) or None
    if torch is None or mindspore is None:
        return Scenario(MINDSPORE, mindspore_version=ms_version)
    try:
        made = torch.tensor(0.0)
        on_mindspore = isinstance(made, mindspore.Tensor)
        kind = "mindspore.Tensor" if on_mindspore else f"{type(made).__module__}.{type(made).__qualname__}"
        how = f"torch.tensor(0.0) is a {kind}"
    except Exception as err:
        package = _package_of(torch)
        if package in (None, "torch"):
            return Scenario(MINDSPORE, mindspore_version=ms_version,
                            how=f"torch is loaded but torch.tensor(0.0) failed ({type(err).__name__})")
        on_mindspore, how = True, f"torch comes from {package} and torch.tensor(0.0) failed ({type(err).__name__})"
    if not on_mindspore:
        return Scenario(MINDSPORE, mindspore_version=ms_version, how=f"torch is PyTorch itself ({how})")
    package = _package_of(torch)
    distribution, version = _distribution_of(torch)
    levels = CHECKED.get((package or "", distribution or "", version or "", ms_version or ""), ())
    return Scenario(MSADAPTER, package, distribution, version, ms_version, how, levels, _package_folder(torch))


def _package_folder(module: Any) -> Optional[str]:
    """The folder of the top-level package whose files hold ``module``
    (``.../site-packages/mindtorch`` for mindtorch's ``torch``); None when
    it has no file."""
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return None
    path = os.path.abspath(path)
    if os.path.basename(path) != "__init__.py":
        return os.path.splitext(path)[0]
    folder = os.path.dirname(path)
    while os.path.exists(os.path.join(os.path.dirname(folder), "__init__.py")):  # a package inside another
        folder = os.path.dirname(folder)
    return folder


def _package_of(module: Any) -> Optional[str]:
    """The name of :func:`_package_folder` (``mindtorch``), or None."""
    folder = _package_folder(module)
    return os.path.basename(folder) if folder else None


def _distribution_of(module: Any) -> tuple[Optional[str], Optional[str]]:
    """(distribution, version) that installed the package of ``module``:
    the ``*.dist-info`` beside it whose RECORD lists its ``__init__.py``;
    (None, None) when none does. Read from the files, not through
    ``importlib.metadata``, which mindtorch's import leaves unable to list
    distributions (it registers a finder whose entries have no metadata)."""
    folder = _package_folder(module)
    if not folder:
        return None, None
    package, site = os.path.basename(folder), os.path.dirname(folder)
    wanted = f"{package}/__init__.py,"
    try:
        infos = sorted(n for n in os.listdir(site) if n.endswith(".dist-info"))
    except OSError:
        return None, None
    for info in infos:
        try:
            with open(os.path.join(site, info, "RECORD"), encoding="utf-8") as f:
                if not any(line.startswith(wanted) for line in f):
                    continue
            return _name_and_version(os.path.join(site, info, "METADATA"))
        except (OSError, ValueError):
            continue
    return None, None


def _name_and_version(metadata: str) -> tuple[Optional[str], Optional[str]]:
    """``Name`` and ``Version`` from the header of a METADATA file (the
    lines before the first empty one).

    Raises:
        OSError: the file cannot be read.
    """
    head: dict[str, str] = {}
    with open(metadata, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                break
            key, _, value = line.partition(":")
            head.setdefault(key.strip(), value.strip())
    return head.get("Name"), head.get("Version")
