"""Progress on long work (issue 19): a rich bar on a terminal, plain periodic lines
otherwise, always on stderr (stdout holds only the result), in the result's units."""
import io
import json
from pathlib import Path

import memsched.cli.main
from memsched.cli.progress import ProgressBar, TimeBar

ROOT = Path(__file__).resolve().parents[1]
CHAIN = str(ROOT / "instances" / "shipped" / "chain_12.json")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_every_five_percent_and_at_the_end():
    s = io.StringIO()
    with ProgressBar("job", 40, stream=s, every_s=1e9) as bar:
        for k in range(40):
            bar.update(text=f"step {k}")
    lines = s.getvalue().splitlines()
    assert len(lines) == 20 and lines[-1].startswith("[job 40/40 ") and lines[-1].endswith("step 39")
    assert "\x1b" not in s.getvalue()  # no terminal codes in a log file


def test_plain_lines_also_when_time_passes():
    s = io.StringIO()
    with ProgressBar("job", 1000, stream=s, every_s=0.0) as bar:
        for k in range(3):
            bar.update(text="x")
    assert len(s.getvalue().splitlines()) == 3


def test_disabled_prints_nothing():
    s = io.StringIO()
    with ProgressBar("job", 5, stream=s, enabled=False) as bar:
        for _ in range(5):
            bar.update()
        bar.note("a note")
    assert s.getvalue() == ""


def test_a_terminal_gets_the_rich_bar():
    t = Terminal()
    with ProgressBar("job", 3, stream=t, every=1) as bar:
        for k in range(3):
            bar.update(text=f"peak {k} KiB")
    out = t.getvalue()
    assert "job" in out and "3/3" in out and "peak 2 KiB" in out
    assert "[job 3/3" not in out  # not the plain form


def test_time_bar_only_on_a_terminal():
    s, t = io.StringIO(), Terminal()
    with TimeBar("order --exact", 5.0, stream=s):
        pass
    with TimeBar("order --exact", 5.0, stream=t):
        import time

        time.sleep(0.6)
    assert s.getvalue() == ""
    assert "order --exact" in t.getvalue() and "5 s time limit" in t.getvalue()


def test_crosscheck_progress_on_stderr_in_bytes_and_stdout_only_the_result(capsys):
    assert memsched.cli.main.main(["crosscheck", CHAIN, "--time-limit", "2"]) == 0
    cap = capsys.readouterr()
    steps = [ln for ln in cap.err.splitlines() if ln.startswith("[crosscheck ")]
    assert len(steps) >= 15 and steps[-1].split()[1].split("/")[0] == steps[-1].split()[1].split("/")[1]
    bounds = next(ln for ln in steps if "bounds:" in ln)
    assert "lower bound on an order's peak" in bounds and bounds.endswith(" B")  # chain_12: bytes, with the unit
    remat = [ln for ln in steps if ln.split("] ")[1].startswith("remat ")]
    assert remat and all(" B: " in ln for ln in remat), remat  # every budget carries its unit
    assert any("trying the next ratio" in ln for ln in remat)  # chain_12 has no schedule at 0.7
    assert "[crosscheck" not in cap.out and cap.out.startswith("graph ")
    assert memsched.cli.main.main(["crosscheck", CHAIN, "--time-limit", "2", "--json"]) == 0
    cap = capsys.readouterr()
    assert "[crosscheck" not in cap.err and json.loads(cap.out)["status"] == "complete"
