"""The all-clear (probe_runtime.windows.summary), tested without MindSpore:
it must never say more than was checked."""
from __future__ import annotations

from probe_runtime.windows.summary import Summary


def test_a_step_cut_short_is_said_not_counted_as_fully_checked():
    """A fresh user's finding: a script that raised inside step 2 got "no
    overflow found in 3 checked step(s)"; the step whose code never reached
    stop() is now named as checked only up to then."""
    summary = Summary("L1", "/d")
    for step in range(3):
        summary.started(step)
        summary.checked(step, exact=True)
    summary.interrupted(2)
    line = summary.line(auto=False)
    assert line.startswith("probe_runtime: no overflow found in 3 checked step(s); dump_path: /d")
    assert line.endswith("; step 2 did not reach stop() (still running at exit: an exception, or no stop()), "
                         "so only its calls up to then were checked")


def test_a_step_never_checked_is_not_called_cut_short():
    summary = Summary("L1", "/d", steps=frozenset({0}))
    summary.started(0)
    summary.checked(0, exact=True)
    summary.started(1)  # outside the step filter: no window opened
    summary.interrupted(1)
    line = summary.line(auto=False)
    assert "did not reach stop()" not in line and "outside the config's step filter" in line


def test_jit_regions_in_the_checked_steps_are_said_with_what_is_not_seen_inside():
    """A fresh user's finding: gradients clipped by clip_by_global_norm
    compiled with @jit overflowed inside the region (every gradient came
    back 0) and L1 said only "no overflow found"."""
    for level in ("L1", "L0", "L2"):
        summary = Summary(level, "/d")
        summary.started(0)
        summary.checked(0, exact=True)
        assert "mindspore.jit" not in summary.line(auto=False).split(" (level L2")[0]
        summary.jit_calls = 3
        line = summary.line(auto=False)
        said = "; 3 call(s) of mindspore.jit regions ran in the checked steps: a region is judged by what it returns"
        assert (said in line) is (level != "L2"), line
        if level != "L2":
            assert "an overflow masked inside one (its result finite" in line


def test_steps_not_checked_are_said_when_records_were_written(capsys):
    """Records in step 0, steps 1-2 run in an execution mode the level does
    not see: no all-clear, but the unchecked steps are said (they were said
    only in the all-clear, so a run with a record kept them quiet)."""
    summary = Summary("L1", "/d")
    for step in range(3):
        summary.started(step)
        summary.checked(step, exact=True)
    summary.not_seen(1, "started in GRAPH_MODE and were NOT checked (step {steps})")
    summary.not_seen(2, "started in GRAPH_MODE and were NOT checked (step {steps})")
    summary.say(found=2, disabled=False, notes=0, auto=False)
    err = capsys.readouterr().err
    assert err == ("probe_runtime: records were written to /d; besides them, 2 step(s) started in GRAPH_MODE and "
                   "were NOT checked (step 1, 2)\n")
    assert "no overflow found" not in err


def test_nothing_more_is_said_when_records_were_written_and_every_step_was_checked(capsys):
    summary = Summary("L1", "/d")
    summary.started(0)
    summary.checked(0, exact=True)
    summary.say(found=1, disabled=False, notes=0, auto=False)
    summary.say(found=0, disabled=False, notes=1, auto=False)
    assert capsys.readouterr().err == ""


def test_steps_outside_the_step_filter_are_said_when_records_were_written(capsys):
    """A fresh user's finding: step filter [0-1, 3], the NaN made in step 2
    (unchecked) and first recorded in step 3 as a Parameter that held it at
    start(); nothing said step 2 had run unchecked."""
    summary = Summary("L1", "/d", steps=frozenset({0, 1, 3}))
    for step in range(4):
        summary.started(step)
        if step != 2:
            summary.checked(step, exact=True)
    summary.say(found=1, disabled=False, notes=0, auto=False)
    err = capsys.readouterr().err
    assert err.startswith("probe_runtime: records were written to /d; besides them, 1 step(s) ran outside the "
                          "config's step filter and were not checked (step 2): an overflow there is not seen, "
                          "and the first record may come after where the overflow started"), err
    summary = Summary("L1", "/d", steps=frozenset({0, 1}))
    for step in range(5):  # steps 2-4 after every checked one: they cannot hide the start
        summary.started(step)
        if step < 2:
            summary.checked(step, exact=True)
    summary.say(found=1, disabled=False, notes=0, auto=False)
    err = capsys.readouterr().err
    assert "(step 2-4): an overflow there is not seen" in err and "may come after" not in err, err
    summary = Summary("L1", "/d", steps=frozenset({0, 1}))
    for step in range(2):
        summary.started(step)
        summary.checked(step, exact=True)
    summary.say(found=1, disabled=False, notes=0, auto=False)
    assert capsys.readouterr().err == ""  # every step that ran was checked: nothing to add


def test_steps_before_the_filter_are_said_when_overflow_nums_is_reached(capsys):
    """A helper's finding: step filter [3, 4], msprobe's default
    overflow_nums 1, the first record in step 4 while step 2 (unchecked)
    had already overflowed. The limit's exit line was the only one, and it
    said nothing (no step of the filter ran after step 4), so nothing
    said steps 0-2 ran unchecked."""
    summary = Summary("L1", "/d", steps=frozenset({3, 4}))
    for step in range(6):
        summary.started(step)
        if step in (3, 4):
            summary.checked(step, exact=True)
    summary.say_limit(1)
    err = capsys.readouterr().err
    assert err == ("probe_runtime: records were written to /d; besides them, 4 step(s) ran outside the config's "
                   "step filter and were not checked (step 0-2, 5): an overflow there is not seen, and the first "
                   "record may come after where the overflow started\n"), err
    # with later steps of the filter too: the limit's line, then that one
    summary = Summary("L1", "/d", steps=frozenset({3, 4, 5}))
    for step in range(6):
        summary.started(step)
        if step in (3, 4):
            summary.checked(step, exact=True)
    summary.say_limit(1)
    first, second = capsys.readouterr().err.splitlines()
    assert first.startswith("probe_runtime: overflow_nums=1 reached in step 4, so detection stopped there: 1 later "
                            "step(s) ran and were not checked (step 5)")
    assert "ran outside the config's step filter and were not checked (step 0-2)" in second
    # no filter: only the limit's line
    summary = Summary("L1", "/d")
    for step in range(3):
        summary.started(step)
        if step == 0:
            summary.checked(step, exact=True)
    summary.say_limit(1)
    assert capsys.readouterr().err.count("\n") == 1


def test_windows_without_step_calls_are_said(capsys):
    """A helper's finding: six start()/stop() windows and no step() call
    put everything in step 0; the exit line said "1 checked step(s)" and
    nothing of the missing step() (with "step": [3] it said "0 checked
    step(s)", step 0 outside the filter)."""
    summary = Summary("L1", "/d")
    for _ in range(6):
        summary.started(0)
        summary.checked(0, exact=True)
    line = summary.line(auto=False)
    assert line.startswith("probe_runtime: no overflow found in 1 checked step(s)")
    assert "start() was called 6 times and step() never, so every window counted as step 0" in line
    summary.step_calls = 1
    assert "step() never" not in summary.line(auto=False)
    once = Summary("L1", "/d")  # one window and no step(): nothing to say
    once.started(0)
    once.checked(0, exact=True)
    assert "step()" not in once.line(auto=False)
