"""``mneme eval … --langsmith DATASET``: push an evaluation's questions and scores to LangSmith as an experiment.

The dataset holds one example per question (inputs: tenant and question; reference outputs: the evidence
turn ids; metadata: category); it is created on the first push, with example ids derived from the dataset
name and the question's place, so later pushes of the same data refer to the same examples. The experiment
is a project tied to the dataset: one retriever run per question (the recalled ids and their source turns)
with ``recall@k`` feedback per cut-off, and the run's summary figures as the project's metadata.

Only with a LangSmith key (``LANGSMITH_API_KEY``; ``LANGSMITH_ENDPOINT`` for a self-hosted one): without
one, ``mneme eval`` refuses ``--langsmith`` rather than send nothing silently.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langsmith import Client

from mneme.errors import ConfigurationError
from mneme.evaluation.datasets import Conversation
from mneme.memory.service import Recalled


def langsmith_client() -> Client:
    """A LangSmith client from the environment; ``ConfigurationError`` without a key (nothing is sent then)."""
    import os

    if not (os.environ.get("LANGSMITH_API_KEY") or os.environ.get("LANGCHAIN_API_KEY")):
        raise ConfigurationError("--langsmith needs LANGSMITH_API_KEY (and LANGSMITH_ENDPOINT if self-hosted)")
    return Client()


class ExperimentRows:
    """Collects one row per question with evidence while ``evaluate`` runs (its ``on_question`` hook)."""

    def __init__(self, *, ks: Sequence[int]) -> None:
        self.ks = sorted(set(ks))
        self.rows: list[dict[str, Any]] = []

    def add(self, conversation: Conversation, index: int, items: list[Recalled]) -> None:
        """Record question ``index`` of ``conversation`` and what was recalled for it."""
        question = conversation.questions[index]
        if not question.evidence:
            return
        evidence = set(question.evidence)
        recall = {str(k): len(evidence & {t for it in items[:k] for t in it.source_turns}) / len(evidence)
                  for k in self.ks}
        self.rows.append({"tenant": conversation.tenant, "index": index, "question": question.text,
                          "category": question.category, "evidence": sorted(evidence),
                          "recalled": [it.id for it in items], "turns": [t for it in items for t in it.source_turns],
                          "recall": recall})


def example_id(dataset: str, tenant: str, index: int) -> uuid.UUID:
    """The stable id of question ``index`` of ``tenant`` in ``dataset``."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"mneme-eval:{dataset}:{tenant}:{index}")


def push_experiment(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], *, dataset: str,
                    client: Client | None = None, experiment: str | None = None) -> dict[str, Any]:
    """Create (or reuse) ``dataset``, then log ``rows`` (one per question) as a new experiment on it.

    Each row has ``tenant``, ``index``, ``question``, ``category``, ``evidence``, ``recalled`` (ids),
    ``turns`` (their source turns, best first) and ``recall`` (``{k: score}``). Returns what was pushed.
    """
    client = client or langsmith_client()
    created = not client.has_dataset(dataset_name=dataset)
    ds = client.create_dataset(dataset, description="Mneme recall evaluation questions") if created \
        else client.read_dataset(dataset_name=dataset)
    if created:
        client.create_examples(dataset_id=ds.id, examples=[{
            "id": example_id(dataset, str(r["tenant"]), int(r["index"])),
            "inputs": {"tenant": r["tenant"], "question": r["question"]},
            "outputs": {"evidence": list(r["evidence"])},
            "metadata": {"category": r["category"]},
        } for r in rows])
    name = experiment or f"mneme-{dataset}-{dt.datetime.now(dt.UTC).strftime('%Y%m%d-%H%M%S')}"
    client.create_project(name, reference_dataset_id=ds.id, metadata=dict(summary))
    for r in rows:
        run_id = uuid.uuid4()
        now = dt.datetime.now(dt.UTC)
        client.create_run(
            name="mneme.recall", run_type="retriever", id=run_id, project_name=name,
            inputs={"tenant": r["tenant"], "question": r["question"]},
            outputs={"recalled": list(r["recalled"]), "turns": list(r["turns"])},
            reference_example_id=example_id(dataset, str(r["tenant"]), int(r["index"])),
            start_time=now, end_time=now, extra={"metadata": {"category": r["category"]}},
        )
        for k, score in r["recall"].items():
            client.create_feedback(run_id, key=f"recall@{k}", score=float(score))
    client.flush()
    return {"dataset": dataset, "dataset_created": created, "experiment": name, "runs": len(rows)}
