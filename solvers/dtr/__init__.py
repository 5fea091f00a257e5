"""DTR (Dynamic Tensor Rematerialization) online eviction: simrd-exact replay of
training traces, budget sweeps with feasibility-hole detection, explanations,
trace-to-graph conversion, lookahead policies, and replay of memsched graphs.

See docs/dtr.md. Public API:

* :func:`replay` (one run of a trace at a ratio/budget), :class:`ReplayResult`
* :func:`sweep`, :func:`find_holes` (budget sweeps, holes)
* :func:`explain` (why a budget fails while a smaller one succeeds)
* :func:`trace_to_graph` (a trace as a memsched Graph)
* :func:`replay_graph` (a memsched Graph replayed by DTR -> SolveResult)
"""
from .explain import explain
from .graph import graph_to_trace, replay_graph, trace_to_graph
from .replay import ReplayResult, budget_for, load_trace, replay, trace_baseline
from .runtime import HEURISTICS, Runtime, baseline, canonical_heuristic, heuristic_names
from .sweep import Hole, Point, SweepResult, find_holes, sweep

__all__ = ["ReplayResult", "budget_for", "load_trace", "replay", "trace_baseline", "HEURISTICS", "Runtime",
           "baseline", "canonical_heuristic", "heuristic_names", "Hole", "Point", "SweepResult", "find_holes",
           "sweep", "explain", "trace_to_graph", "replay_graph", "graph_to_trace"]
