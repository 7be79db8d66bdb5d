"""``mneme serve --workers N``: several real server processes on one port over one ``chroma run``.

Counts, not impressions: every acknowledged turn is looked for by its unique made-up name in its user's
memories, and in no other user's; the processes are counted by the write journals they own.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.cli import main
from mneme.config import Settings
from mneme.errors import ConfigurationError
from mneme.evaluation.bench_serve import process_tree, verify
from mneme.serve_workers import check_workers


def test_workers_need_a_chroma_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MNEME_CHROMA_URL", raising=False)
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path))
    assert main(["serve", "--workers", "2", "--port", "1"]) == 2  # refused before anything binds or starts
    assert "MNEME_CHROMA_URL" in capsys.readouterr().err
    with pytest.raises(ConfigurationError, match="at least 1"):
        check_workers(0, Settings(data_dir=tmp_path))
    check_workers(1, Settings(data_dir=tmp_path))  # one process: embedded Chroma is fine
    check_workers(3, Settings(data_dir=tmp_path, chroma_url="http://127.0.0.1:1"))


def _started(log: Callable[[], str], workers: int, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while log().count("Application startup complete") < workers:
        assert time.monotonic() < deadline, log()[-2000:]
        time.sleep(0.2)


@pytest.mark.slow
def test_two_workers_share_one_port_and_lose_or_leak_nothing(spawn_mneme_serve: Callable[..., Any],
                                                             chroma_server: Any) -> None:
    prefix = f"w{uuid.uuid4().hex[:8]}"
    server = spawn_mneme_serve({"MNEME_CHROMA_URL": chroma_server.url, "MNEME_COLLECTION_PREFIX": prefix},
                               "--workers", "2")
    _started(server.log_text, 2)
    workers = [pid for pid in process_tree(server.proc.pid)[1:]
               if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(workers) == 2
    data_dir = Path(server.log).parent / server.log.stem  # the fixture's MNEME_DATA_DIR (serveN beside serveN.log)
    info = json.loads((data_dir / "server.json").read_text())
    assert info["pid"] == server.proc.pid and info["url"] == server.url
    admin = {"Authorization": f"Bearer {info['admin_token']}"}
    assert httpx.get(f"{server.url}/documents", headers=admin, timeout=30).status_code == 200  # every worker's token

    said: dict[str, list[str]] = {}
    for u in range(8):
        user = f"{prefix}-u{u}"
        with httpx.Client(timeout=60) as http:  # a connection per user: the kernel spreads them over the workers
            for i in range(3):
                name = f"Vila{uuid.uuid4().hex[:6]}"
                text = f"我第{i}次旅行去了一个叫{name}的村子。" if i % 2 else f"On trip {i} I visited {name}."
                r = http.post(f"{server.url}/agent/invoke",
                              json={"input": {"messages": [{"role": "user", "content": text}]}},
                              headers={"X-User-Id": user, "X-Thread-Id": "t"})
                assert r.status_code == 200, r.text
                assert r.json()["output"]["memory_report"].get("queued")
                said.setdefault(user, []).append(name)
    checked = verify(server.url, said, timeout=60)
    assert checked == {"acknowledged": 24, "stored_within_s": checked["stored_within_s"], "lost": 0,
                       "not_recalled": 0, "leaked": 0}
    journals = sorted(p.name for p in data_dir.glob(f"{prefix}-journal-*/journal-*.sqlite3"))
    assert len(journals) == 2, journals  # each worker process owns its own write journal

    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    assert not (data_dir / "server.json").exists()
    assert all(not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
               for pid in workers)
