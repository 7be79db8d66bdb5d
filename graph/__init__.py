"""The Mneme agent graph: state, run settings (``Context``), nodes and the builder."""

from mneme.graph.context import Context, resolve_context
from mneme.graph.graph import build_builder, build_graph
from mneme.graph.state import InputState, State

__all__ = ["Context", "InputState", "State", "build_builder", "build_graph", "resolve_context"]
