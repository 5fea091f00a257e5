"""Every plot is rendered and checked (issue 19): it is written, titled, its axes carry
units, legends sit outside the data, colours are distinct, and a Pareto front holds only
non-dominated points (checked on the data handed to matplotlib)."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import pytest  # noqa: E402

import memsched.cli.main  # noqa: E402
from memsched.cli.remat import pareto_figure, pareto_front  # noqa: E402
from memsched.instances import load_graph  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "shipped"
PNG = b"\x89PNG\r\n\x1a\n"


def _png(path):
    data = Path(path).read_bytes()
    assert data[:8] == PNG and len(data) > 5000, path


def _legend_outside(fig, ax, leg):
    """The legend's box does not overlap the axes' data area."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    lb, ab = leg.get_window_extent(r), ax.get_window_extent(r)
    return lb.x0 >= ab.x1 - 1 or lb.y1 <= ab.y0 + 1 or lb.x1 <= ab.x0 + 1 or lb.y0 >= ab.y1 - 1


ROWS = [  # one dominated point (peak 900, 5 %: beaten by 800 at 2 %), one budget with no schedule
    {"budget_ratio": 1.0, "budget": 1000, "status": "optimal", "peak": 1000, "overhead_pct": 0.0},
    {"budget_ratio": 0.9, "budget": 900, "status": "feasible", "peak": 900, "overhead_pct": 5.0},
    {"budget_ratio": 0.8, "budget": 800, "status": "optimal", "peak": 800, "overhead_pct": 2.0},
    {"budget_ratio": 0.7, "budget": 700, "status": "feasible", "peak": 700, "overhead_pct": 9.0},
    {"budget_ratio": 0.5, "budget": 500, "status": "infeasible", "peak": None, "overhead_pct": None},
]


def test_pareto_front_keeps_only_non_dominated_points():
    front, dominated = pareto_front(ROWS)
    assert [(r["peak"], r["overhead_pct"]) for r in front] == [(700, 9.0), (800, 2.0), (1000, 0.0)]
    assert [(r["peak"], r["overhead_pct"]) for r in dominated] == [(900, 5.0)]


def test_pareto_figure_draws_the_front_without_dominated_points_and_legend_outside():
    g = load_graph(str(SHIPPED / "chain_12.json"))
    fig = pareto_figure(g, ROWS, method="cp")
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    front = lines["Pareto front"]
    xs = list(front.get_xdata())
    assert sorted(xs) == xs and 900 not in xs and len(xs) == 3  # bytes < 1 KiB: the axis is in B
    dom = lines["dominated (not on the front)"]
    assert list(dom.get_xdata()) == [900]
    assert ax.get_xlabel() == "peak memory (B)" and "%" in ax.get_ylabel()
    title = ax.get_title()
    assert g.name in title and "Pareto" in title and "o optimal" not in title  # no ASCII legend in the title
    assert _legend_outside(fig, ax, ax.get_legend())
    # no offset (the "1e10" on the axis)
    assert ax.xaxis.get_major_formatter().get_offset() == ""


def test_pareto_command_writes_a_readable_png(tmp_path, capsys):
    png = tmp_path / "front.png"
    rc = memsched.cli.main.main(["pareto", str(SHIPPED / "random_layered_n30.json"), "--budgets", "1.0", "0.8",
                                 "--method", "dtr-greedy", "--plot", str(png)])
    assert rc == 0 and f"plot written to {png}" in capsys.readouterr().out
    _png(png)


def test_pareto_units_scale_to_kib_mib():
    g = load_graph(str(SHIPPED / "chain_12.json"))
    rows = [dict(r, peak=None if r["peak"] is None else r["peak"] * 2 ** 20, budget=r["budget"] * 2 ** 20)
            for r in ROWS]
    ax = pareto_figure(g, rows).axes[0]
    assert ax.get_xlabel() == "peak memory (MiB)"
    assert max(ax.get_lines()[0].get_xdata()) == pytest.approx(1000.0)


def test_crosscheck_timelines_small_multiples_distinct_colours(tmp_path, capsys):
    from memsched.cli.crosscheck import timelines_figure
    from memsched.solvers.crosscheck import crosscheck

    g = load_graph(str(SHIPPED / "random_layered_n30.json"))
    rep = crosscheck(g, budget=0.8, time_limit=5)
    fig = timelines_figure(rep)
    assert len(fig.axes) == 2  # orderings | remat
    methods = {r.method for r in rep.rows}
    for ax in fig.axes:
        steps = [ln for ln in ax.get_lines() if set(ln.get_label().split(":")[0].split(" = ")) <= methods]
        colours = [mcolors.to_hex(ln.get_color()) for ln in steps]
        assert len(colours) == len(set(colours)) >= 3  # every line of a panel its own colour
        refs = [ln for ln in ax.get_lines() if "bound" in ln.get_label() or "budget" in ln.get_label()]
        assert refs and all(mcolors.to_hex(ln.get_color()) == "#000000" for ln in refs)  # never a method's colour
        assert sum(ln.get_linewidth() > 2 for ln in steps) == 1  # the panel's best line is highlighted
        markers = [ln for ln in ax.get_lines() if ln.get_marker() == "v"]
        assert len(markers) == len(steps)  # each line's peak is marked ...
        for ln, mk in zip(steps, markers):  # ... at the line's highest point
            assert mk.get_ydata()[0] == max(ln.get_ydata())
        assert _legend_outside(fig, ax, ax.get_legend())
        assert "(B)" in fig.axes[0].get_ylabel() or "KiB" in fig.axes[0].get_ylabel()
    # methods with one and the same schedule share one line (here dfs and best)
    order_rows = [r for r in rep.rows if r.problem == "order"]
    same = [(a.method, b.method) for a in order_rows for b in order_rows
            if a.method < b.method and a.schedule.events == b.schedule.events]
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert same and all(any(x in lab and y in lab and " = " in lab for lab in labels) for x, y in same), labels
    order_ax, remat_ax = fig.axes
    assert any("lower bound" in ln.get_label() for ln in order_ax.get_lines())
    # the order lower bound is not drawn under remat schedules (they may go below it)
    assert not any("lower bound" in ln.get_label() for ln in remat_ax.get_lines())
    assert any("budget" in ln.get_label() for ln in remat_ax.get_lines())
    # the report's gap column names what each gap measures (a peak gap for orders, compute for remat)
    from memsched.cli.crosscheck import format_report

    for line in format_report(rep).splitlines():
        cells = line.split()
        if len(cells) > 2 and cells[1] in ("order", "remat") and cells[-1] != "-":
            assert cells[-1] == ("peak" if cells[1] == "order" else "compute"), line
    png = tmp_path / "t.png"
    from memsched.cli.crosscheck import plot_timelines

    plot_timelines(rep, str(png))
    _png(png)


def test_dtr_sweep_plot_names_the_whole_trace_and_counts_holes_in_words(tmp_path, monkeypatch):
    import matplotlib.figure

    from memsched.cli.dtr import plot_sweep
    from memsched.solvers.dtr.sweep import Hole, sweep
    from test_dtr_sweep_harness import KW, synth_file

    trace = synth_file(tmp_path, 12, 3)
    res = sweep(trace, "dtr", jobs=1, **KW)
    titles = []
    orig = matplotlib.figure.Figure.savefig

    def spy(self, *a, **k):
        titles.append(self._suptitle.get_text())
        return orig(self, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    res.holes = [Hole(feasible_below=0.29, first=0.3, last=0.31, feasible_above=0.32, outcomes=["oom", "oom"],
                      ratios=[0.3, 0.31])]
    png = tmp_path / "m.png"
    plot_sweep(res, str(png))
    _png(png)
    assert trace.name in titles[-1] and "1 hole region " in titles[-1] and "B" in titles[-1]
    res.holes = []
    plot_sweep(res, str(png))
    assert "no holes" in titles[-1] and "0 hole" not in titles[-1]


def test_bench_report_plots(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\ntime_limit = 2\n[[instances]]\ngenerator = "random_dag"\n'
                    'grid = { n = [8, 10] }\nseeds = [0, 1]\n[[solvers]]\nsolver = "order"\n'
                    'grid = { method = ["dfs", "greedy"] }\n[[solvers]]\nsolver = "exact"\n'
                    '[[solvers]]\nsolver = "remat"\nparams = { method = "dtr-greedy" }\nbudgets = [1.0, 0.8, 0.6]\n')
    res = tmp_path / "r.jsonl"
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(res), "-q"]) == 0
    out = tmp_path / "rep"
    assert memsched.cli.main.main(["report", str(res), "-o", str(out)]) == 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "cert_gap.png" in pngs and "feasibility.png" in pngs and any(p.startswith("timeline_") for p in pngs)
    for p in out.glob("*.png"):
        _png(p)


def test_bench_pareto_plot_uses_only_front_points():
    from memsched.solvers.harness.plots import front

    assert front([(1.0, 0.0), (0.9, 5.0), (0.8, 2.0), (0.7, 9.0), (0.8, 2.0)]) == [(0.7, 9.0), (0.8, 2.0),
                                                                                   (1.0, 0.0)]
