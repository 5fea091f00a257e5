"""WHAT is solved: file formats and importers, generators, NP-hardness gadgets,
trace parsers, and the shipped instance files under instances/shipped/."""
from pathlib import Path

from .formats import InputError, graph_from_json, graph_to_json, load_graph, load_schedule, save_graph

SHIPPED = Path(__file__).resolve().parent / "shipped"

__all__ = ["InputError", "graph_from_json", "graph_to_json", "load_graph", "load_schedule", "save_graph", "SHIPPED"]
