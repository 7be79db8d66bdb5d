"""Mneme: a LangGraph agent with a long-term memory that remembers, recalls and forgets like a person."""

__version__ = "0.1.0"
