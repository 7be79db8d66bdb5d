"""``mneme eval … --langsmith DATASET`` pushes questions, recalled ids and recall@k feedback as an experiment.

A local HTTP server plays LangSmith (datasets, examples, sessions, runs, feedback): nothing leaves the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.test_eval import MB_HISTORY, MB_QA

MNEME = str(Path(sys.executable).with_name("mneme"))
pytestmark = pytest.mark.slow


class FakeLangSmith:
    """Just enough of LangSmith's API for a client to create a dataset, examples, an experiment, runs, feedback."""

    def __init__(self) -> None:
        self.datasets: dict[str, dict[str, Any]] = {}
        self.examples: list[dict[str, Any]] = []
        self.sessions: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self.feedback: list[dict[str, Any]] = []
        self.requests = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, data: Any, status: int = 200) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                fake.requests += 1
                url = urlparse(self.path)
                if url.path.endswith("/info"):
                    return self._reply({"version": "0.10.0", "instance_flags": {},
                                        "batch_ingest_config": {"use_multipart_endpoint": False}})
                if url.path.endswith("/datasets"):
                    name = parse_qs(url.query).get("name", [None])[0]
                    return self._reply([d for d in fake.datasets.values() if name in (None, d["name"])])
                return self._reply({"detail": "not found"}, 404)

            def do_POST(self) -> None:  # noqa: N802
                fake.requests += 1
                data = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                path = urlparse(self.path).path
                if path.endswith("/datasets"):
                    ds = {"id": str(uuid.uuid4()), "name": data["name"], "created_at": "2026-01-01T00:00:00Z",
                          "description": data.get("description")}
                    fake.datasets[ds["id"]] = ds
                    return self._reply(ds)
                if path.endswith("/examples/bulk"):
                    fake.examples += data
                    return self._reply([{"id": e["id"]} for e in data])
                if path.endswith("/sessions"):
                    session = {**data, "id": data.get("id") or str(uuid.uuid4()),
                               "start_time": "2026-01-01T00:00:00Z", "tenant_id": str(uuid.uuid4())}
                    fake.sessions.append(session)
                    return self._reply(session)
                if path.endswith("/runs/batch"):
                    fake.runs += data.get("post", [])
                    return self._reply({})
                if path.endswith("/runs"):
                    fake.runs.append(data)
                    return self._reply({})
                if path.endswith("/feedback"):
                    fake.feedback.append(data)
                    return self._reply({**data})
                return self._reply({"detail": "not found"}, 404)

            do_PATCH = do_POST  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def langsmith() -> Iterator[FakeLangSmith]:
    fake = FakeLangSmith()
    yield fake
    fake.server.shutdown()


@pytest.fixture
def memorybank(tmp_path: Path) -> list[str]:
    history, qa = tmp_path / "history.json", tmp_path / "qa.json"
    history.write_text(json.dumps(MB_HISTORY, ensure_ascii=False), encoding="utf-8")
    qa.write_text(json.dumps(MB_QA, ensure_ascii=False), encoding="utf-8")
    return [str(history), str(qa)]


def _eval(tmp_path: Path, memorybank: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    return subprocess.run([MNEME, "eval", "memorybank", *memorybank, "--store", "memory", "--k", "1,5",
                           "--langsmith", "mb-dev"],
                          env={**base, "MNEME_DATA_DIR": str(tmp_path / "data"), **env},
                          capture_output=True, text=True, timeout=300)


def test_an_eval_becomes_an_experiment_on_its_dataset(tmp_path: Path, memorybank: list[str],
                                                      langsmith: FakeLangSmith) -> None:
    env = {"LANGSMITH_ENDPOINT": langsmith.url, "LANGSMITH_API_KEY": "local-test-key"}
    first = _eval(tmp_path, memorybank, env)
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert result["langsmith"]["dataset_created"] is True and result["langsmith"]["runs"] == 4
    assert len(langsmith.examples) == 4
    assert {e["inputs"]["question"] for e in langsmith.examples} == {q["question"] for q in MB_QA}
    (session,) = langsmith.sessions
    assert session["reference_dataset_id"] == next(iter(langsmith.datasets))
    assert session["extra"]["metadata"]["recall"] == result["recall"]
    runs = [r for r in langsmith.runs if r.get("name") == "mneme.recall"]
    assert {r["reference_example_id"] for r in runs} == {e["id"] for e in langsmith.examples}
    assert all(r["outputs"]["recalled"] for r in runs)
    for k in ("1", "5"):  # the feedback is the per-question recall the summary averages
        scores = [f["score"] for f in langsmith.feedback if f["key"] == f"recall@{k}"]
        assert len(scores) == 4 and round(sum(scores) / 4, 4) == result["recall"][k]

    second = _eval(tmp_path, memorybank, env)  # the dataset exists: a new experiment on the same examples
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["langsmith"]["dataset_created"] is False
    assert len(langsmith.examples) == 4 and len(langsmith.sessions) == 2
    again = [r for r in langsmith.runs if r.get("name") == "mneme.recall"][4:]
    assert {r["reference_example_id"] for r in again} == {e["id"] for e in langsmith.examples}


def test_without_a_key_it_says_so_and_sends_nothing(tmp_path: Path, memorybank: list[str],
                                                    langsmith: FakeLangSmith) -> None:
    proc = _eval(tmp_path, memorybank, {"LANGSMITH_ENDPOINT": langsmith.url})
    assert proc.returncode != 0
    assert "LANGSMITH_API_KEY" in proc.stderr and "Traceback" not in proc.stderr
    assert langsmith.requests == 0
