"""``mneme serve`` with API keys and JWTs configured, as a real process: the verified identity is the only user."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mneme.keys import KeyStore

MNEME = str(Path(sys.executable).with_name("mneme"))
SECRET = "hs256-secret-for-the-test-server-0123456789"
AUD, ISS = "mneme-tests", "https://idp.test"

pytestmark = [pytest.mark.server, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(data_dir: Path, *args: str, **env_extra: str) -> tuple[subprocess.Popen[str], str]:
    """``mneme serve`` (fake embeddings, no model) on a free port; the process and its URL once healthy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(MNEME_DATA_DIR=str(data_dir), MNEME_EMBEDDINGS="fake", **env_extra)
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / "serve.log").open("w") as log:  # a file, not a pipe nobody drains
        proc = subprocess.Popen([MNEME, "serve", "--port", str(port), *args], env=env, stdout=subprocess.DEVNULL,
                                stderr=log, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise AssertionError((data_dir / "serve.log").read_text())
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            raise AssertionError("mneme serve did not start")
        time.sleep(0.3)


@dataclass
class Server:
    url: str
    data_dir: Path
    keys: dict[str, str]
    rsa_private: Any
    proc: subprocess.Popen[str]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("auth-serve") / "data"
    store = KeyStore(data / "keys.sqlite3")
    keys = {user: store.create(user)[1] for user in ("alice", "bob")}
    keys["admin"] = store.create("ops", admin=True)[1]
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    proc, url = start_serve(data, MNEME_JWT_SECRET=SECRET, MNEME_JWT_PUBLIC_KEY=pem, MNEME_JWT_AUDIENCE=AUD,
                            MNEME_JWT_ISSUER=ISS)
    assert "credentials required: API keys" in (data / "serve.log").read_text()
    try:
        yield Server(url, data, keys, private, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def ask(url: str, text: str, *, key: str | None = None, thread: str | None = None,
        headers: dict[str, str] | None = None, **body: Any) -> httpx.Response:
    sent = dict(headers or {})
    if key:
        sent["Authorization"] = f"Bearer {key}"
    if thread:
        sent["X-Thread-Id"] = thread
    payload = {"input": {"messages": [{"role": "user", "content": text}]}, **body}
    return httpx.post(f"{url}/agent/invoke", json=payload, headers=sent, timeout=60)


def answer(r: httpx.Response) -> str:
    assert r.status_code == 200, r.text
    return str(r.json()["output"]["answer"])


def make_jwt(key: Any = SECRET, alg: str = "HS256", **claims: Any) -> str:
    payload = {"sub": "alice", "aud": AUD, "iss": ISS, "exp": int(time.time()) + 600, **claims}
    return jwt.encode(payload, key, algorithm=alg)


def test_no_or_bad_credentials_are_401(server: Server) -> None:
    for key in (None, "nonsense", "mneme_000000000000_wrong", server.keys["alice"][:-2]):
        r = ask(server.url, "hi", key=key, headers={"X-User-Id": "alice"})
        assert r.status_code == 401, (key, r.text)
        assert r.headers.get("www-authenticate") == "Bearer"
    assert httpx.get(f"{server.url}/memories", headers={"X-User-Id": "alice"}).status_code == 401


def test_the_keys_user_recalls_across_threads_and_nobody_can_impersonate_it(server: Server) -> None:
    assert ask(server.url, "我养了一只叫豆豆的猫", key=server.keys["alice"], thread="a1").status_code == 200
    assert "豆豆" in answer(ask(server.url, "我的猫叫什么名字？", key=server.keys["alice"], thread="a2"))
    bob = server.keys["bob"]
    assert "豆豆" not in answer(ask(server.url, "我的猫叫什么名字？", key=bob, headers={"X-User-Id": "alice"}))
    body_claims = {"config": {"configurable": {"user_id": "alice", "langgraph_auth_user_id": "alice"}}}
    assert "豆豆" not in answer(ask(server.url, "我的猫叫什么名字？", key=bob, **body_claims))


def test_jwts_name_the_user_hs256_and_rs256(server: Server) -> None:
    ask(server.url, "My favourite tea is oolong", key=server.keys["alice"])
    assert "oolong" in answer(ask(server.url, "Which tea is my favourite?", key=make_jwt()))
    assert "oolong" in answer(ask(server.url, "Which tea is my favourite?", key=make_jwt(server.rsa_private, "RS256")))
    assert "oolong" not in answer(ask(server.url, "Which tea is my favourite?", key=make_jwt(sub="bob"),
                                      headers={"X-User-Id": "alice"}))


@pytest.mark.parametrize("claims", [{"aud": "someone-else"}, {"iss": "https://evil.test"},
                                    {"exp": int(time.time()) - 3600}, {"sub": "bad user/id"}])
def test_jwts_with_wrong_audience_issuer_or_expiry_are_401(server: Server, claims: dict[str, Any]) -> None:
    assert ask(server.url, "hi", key=make_jwt(**claims)).status_code == 401
    assert ask(server.url, "hi", key=make_jwt("a-different-secret-0123456789abcdef")).status_code == 401
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert ask(server.url, "hi", key=make_jwt(other, "RS256")).status_code == 401


def test_the_memory_api_answers_for_the_authenticated_user_only(server: Server) -> None:
    alice = {"Authorization": f"Bearer {server.keys['alice']}"}
    bob = {"Authorization": f"Bearer {server.keys['bob']}", "X-User-Id": "alice"}
    ask(server.url, "我住在杭州，在一家银行工作", key=server.keys["alice"])
    mine = httpx.get(f"{server.url}/memories", headers=alice).json()
    assert mine["user_id"] == "alice" and any("杭州" in m["text"] for m in mine["memories"])
    theirs = httpx.get(f"{server.url}/memories", headers=bob).json()
    assert theirs["user_id"] == "bob" and not any("杭州" in m["text"] for m in theirs["memories"])
    found = httpx.post(f"{server.url}/memories/search", json={"query": "杭州", "k": 5}, headers=bob).json()
    assert not any("杭州" in m["text"] for m in found["results"])
    some_id = next(m["id"] for m in mine["memories"] if "杭州" in m["text"])
    assert httpx.delete(f"{server.url}/memories/{some_id}", headers=bob).status_code == 404
    assert httpx.post(f"{server.url}/memories/{some_id}/restore", headers=bob).status_code == 404
    assert httpx.delete(f"{server.url}/memories", headers=bob).json()["user_id"] == "bob"  # erases bob, not alice
    assert some_id in {m["id"] for m in httpx.get(f"{server.url}/memories", headers=alice).json()["memories"]}
    assert httpx.get(f"{server.url}/documents", headers=alice).status_code == 403


def test_server_json_gives_a_local_admin_token_and_is_private(server: Server) -> None:
    path = server.data_dir / "server.json"
    info = json.loads(path.read_text())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert info["url"] == server.url and info["pid"] == server.proc.pid
    admin = {"Authorization": f"Bearer {info['admin_token']}"}
    posted = httpx.post(f"{server.url}/documents", headers=admin, timeout=60,
                        json={"text": "退货政策：三十天内可以无理由退货。", "source": "policy.md"})
    assert posted.status_code == 200, posted.text
    listed = httpx.get(f"{server.url}/documents", headers=admin).json()["documents"]
    assert [d["source"] for d in listed] == ["policy.md"]
    key_admin = {"Authorization": f"Bearer {server.keys['admin']}"}
    assert httpx.get(f"{server.url}/documents", headers=key_admin).json()["documents"] == listed
    # the admin acts for the user it names
    assert ask(server.url, "我喜欢周末去爬山", key=server.keys["alice"]).status_code == 200
    as_alice = httpx.get(f"{server.url}/memories", headers={**admin, "X-User-Id": "alice"}).json()
    assert as_alice["user_id"] == "alice" and as_alice["memories"]
    assert httpx.delete(f"{server.url}/documents", params={"source": "policy.md"}, headers=admin).json()["deleted"]
    assert httpx.get(f"{server.url}/documents", headers=admin).json()["documents"] == []


def test_server_json_is_removed_on_a_clean_exit(tmp_path: Path) -> None:
    proc, _ = start_serve(tmp_path / "data")
    assert (tmp_path / "data" / "server.json").exists()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert not (tmp_path / "data" / "server.json").exists()


def test_dev_mode_refuses_a_public_host_unless_told(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_"))}
    env.update(MNEME_DATA_DIR=str(tmp_path / "data"), MNEME_EMBEDDINGS="fake")
    refused = subprocess.run([MNEME, "serve", "--host", "0.0.0.0", "--port", str(free_port())], env=env,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--insecure-dev-auth" in refused.stderr
    proc, url = start_serve(tmp_path / "data2", "--host", "0.0.0.0", "--insecure-dev-auth")
    try:
        assert httpx.get(f"{url}/memories", headers={"X-User-Id": "alice"}).json()["user_id"] == "alice"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "DEV MODE" in (tmp_path / "data2" / "serve.log").read_text()


def test_two_servers_on_one_postgresql_share_keys_and_revocation(tmp_path: Path, postgres_server: Any) -> None:
    """Keys made once (``mneme keys create`` with MNEME_POSTGRES_URL) are accepted by every process; a revoke too."""
    url = postgres_server.database()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_"))}
    env.update(MNEME_DATA_DIR=str(tmp_path / "cli"), MNEME_POSTGRES_URL=url)
    made = subprocess.run([MNEME, "keys", "create", "--user", "alice"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    assert not (tmp_path / "cli" / "keys.sqlite3").exists()
    procs = []
    try:
        for name in ("a", "b"):
            proc, base = start_serve(tmp_path / name, MNEME_POSTGRES_URL=url)
            procs.append((proc, base))
        for _, base in procs:
            assert ask(base, "hello", key=key).status_code == 200
            assert ask(base, "hello", headers={"X-User-Id": "alice"}).status_code == 401
        key_id = key.split("_")[1]
        revoked = subprocess.run([MNEME, "keys", "revoke", key_id], env=env, capture_output=True, text=True,
                                 timeout=60)
        assert revoked.returncode == 0, revoked.stderr
        for _, base in procs:
            assert ask(base, "hello", key=key).status_code == 401
    finally:
        for proc, _ in procs:
            proc.terminate()
            proc.wait(timeout=30)
