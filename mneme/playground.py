"""The chat page at ``/agent/playground/``: a person talks to the agent in a browser.

One small self-contained page (no build step, no external assets: it works offline) over the same
``/agent/stream`` route as any client, so the reply grows as the model writes it. It shows the
conversation, carries the thread the server returns (``X-Thread-Id``) until "New thread", and sends
the identity the server expects, which it asks ``auth`` beside it: with keys or JWTs configured, the
key typed in its field as ``Authorization: Bearer``; in dev mode a user id as ``X-User-Id`` (the
server's ``--default-user``, else ``local``, editable). Errors (401, 413 …) are shown, never
swallowed. Replies are inserted as text, never as HTML.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Mneme</title>
<style>
  :root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --me: #dbeafe; --bot: #f6f8fa; --err: #b42318; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans CJK SC", sans-serif;
         color: var(--fg); display: flex; flex-direction: column; height: 100vh; }
  header { display: flex; gap: .5rem; align-items: center; padding: .6rem 1rem; border-bottom: 1px solid var(--line);
           flex-wrap: wrap; }
  header h1 { font-size: 1.1rem; margin: 0 1rem 0 0; }
  header input { padding: .3rem .5rem; border: 1px solid var(--line); border-radius: 6px; width: 11rem; }
  header .thread { color: var(--muted); font-size: .85rem; margin-left: auto; }
  button { padding: .35rem .8rem; border: 1px solid var(--line); border-radius: 6px; background: #fff;
           cursor: pointer; }
  button.primary { background: #1f6feb; color: #fff; border-color: #1f6feb; }
  button:disabled { opacity: .5; cursor: default; }
  #log { flex: 1; overflow-y: auto; padding: 1rem; display: flex; flex-direction: column; gap: .6rem; }
  .msg { max-width: 46rem; padding: .55rem .8rem; border-radius: 10px; white-space: pre-wrap; word-wrap: break-word; }
  .msg.user { align-self: flex-end; background: var(--me); }
  .msg.assistant { align-self: flex-start; background: var(--bot); border: 1px solid var(--line); }
  .msg.pending { opacity: .75; }
  .msg details { margin-top: .4rem; color: var(--muted); font-size: .85rem; }
  .msg details li { margin: .15rem 0; }
  .empty { color: var(--muted); margin: auto; text-align: center; }
  #error { color: var(--err); padding: 0 1rem; min-height: 1.2rem; font-size: .9rem; }
  form { display: flex; gap: .5rem; padding: .6rem 1rem 1rem; border-top: 1px solid var(--line); }
  textarea { flex: 1; resize: none; height: 3.2rem; padding: .5rem; border: 1px solid var(--line); border-radius: 8px;
             font: inherit; }
</style>
</head>
<body>
<header>
  <h1>Mneme</h1>
  <input id="key" type="password" placeholder="API key or JWT" autocomplete="off" hidden>
  <input id="user" placeholder="user id (dev mode)" autocomplete="off" hidden>
  <span id="mode" class="thread"></span>
  <button id="new-thread" type="button">New thread</button>
  <span class="thread">thread: <code id="thread">new</code></span>
</header>
<div id="log"><p class="empty" id="empty">Say something. Mneme remembers across threads.</p></div>
<div id="error" role="alert"></div>
<form id="form">
  <textarea id="message" placeholder="Message (Enter to send, Shift+Enter for a new line)"></textarea>
  <button id="send" class="primary" type="submit">Send</button>
</form>
<script>
(() => {
  const $ = (id) => document.getElementById(id);
  const endpoint = new URL("../stream", window.location.href).toString();
  let thread = null;
  let devMode = false;
  for (const id of ["key", "user"]) {
    $(id).value = localStorage.getItem("mneme." + id) || "";
    $(id).addEventListener("change", () => localStorage.setItem("mneme." + id, $(id).value.trim()));
  }
  const ready = fetch(new URL("auth", window.location.href)).then((r) => r.json()).then((auth) => {
    devMode = !!auth.dev_mode;
    if (devMode) {
      $("user").hidden = false;
      if (!$("user").value) $("user").value = auth.default_user || "local";
      $("mode").textContent = "dev mode: you name the user";
    } else {
      $("key").hidden = false;
      $("mode").textContent = "sign in with your API key";
    }
  }).catch(() => { $("key").hidden = false; $("user").hidden = false; });
  function show(role, text, recalled, div) {
    const empty = $("empty"); if (empty) empty.remove();
    div = div || document.createElement("div");
    div.className = "msg " + role;
    div.textContent = text;
    if (recalled && recalled.length) {
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = "recalled " + recalled.length;
      const list = document.createElement("ul");
      for (const item of recalled) {
        const li = document.createElement("li");
        li.textContent = "[" + item.id + "] " + String(item.text).slice(0, 200);
        list.appendChild(li);
      }
      details.append(summary, list);
      div.appendChild(details);
    }
    if (!div.parentNode) $("log").appendChild(div);
    $("log").scrollTop = $("log").scrollHeight;
    return div;
  }
  function setThread(id) { thread = id; $("thread").textContent = id || "new"; }
  function detailOf(data, fallback) {
    if (data && data.detail) return typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
    return fallback;
  }
  // One turn over /agent/stream: the reply grows in a pending bubble as the model writes it ({"delta"} events;
  // a {"reset"} event empties it), then the turn's object (answer, thread_id, recalled …) completes it.
  async function send(text) {
    const headers = { "content-type": "application/json" };
    await ready;
    const key = $("key").value.trim(), user = $("user").value.trim();
    if (key && !devMode) headers["Authorization"] = "Bearer " + key;
    if (user && devMode) headers["X-User-Id"] = user;
    if (thread) headers["X-Thread-Id"] = thread;
    const body = JSON.stringify({ input: { messages: [{ role: "user", content: text }] } });
    const response = await fetch(endpoint, { method: "POST", headers, body });
    if (!response.ok) {
      let data = null;
      try { data = await response.json(); } catch (e) { data = null; }
      throw new Error(response.status + ": " + detailOf(data, response.statusText));
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "", written = "", bubble = null, out = null;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\\r\\n/g, "\\n");
      let cut;
      while ((cut = buffer.indexOf("\\n\\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "message", data = "";
        for (const line of block.split("\\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (event === "error") {
          let info = null;
          try { info = JSON.parse(data); } catch (e) { info = null; }
          throw new Error((info && info.status_code ? info.status_code + ": " : "") + (info && info.message || data));
        }
        if (event !== "data" || !data) continue;
        const chunk = JSON.parse(data);
        if (chunk.reset) {  // the text so far is withdrawn (the model broke off): what follows replaces it
          written = "";
          if (bubble) bubble = show("assistant pending", written, null, bubble);
        } else if (typeof chunk.delta === "string") {
          written += chunk.delta;
          bubble = show("assistant pending", written, null, bubble);
        } else {
          out = chunk;
        }
      }
    }
    if (!out) throw new Error("the reply ended before the turn was complete");
    out.bubble = bubble;
    return out;
  }
  $("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("message").value.trim();
    if (!text) return;
    $("error").textContent = "";
    $("send").disabled = true;
    show("user", text);
    $("message").value = "";
    try {
      const out = await send(text);
      setThread(out.thread_id);
      show("assistant", out.answer, out.recalled, out.bubble);
      if (out.degraded && out.degraded.length) $("error").textContent = out.degraded.join("; ");
    } catch (err) {
      $("error").textContent = String(err.message || err);
    } finally {
      $("send").disabled = false;
      $("message").focus();
    }
  });
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("form").requestSubmit();
    }
  });
  $("new-thread").addEventListener("click", () => {
    setThread(null);
    $("log").replaceChildren();
    const p = document.createElement("p");
    p.className = "empty"; p.id = "empty"; p.textContent = "New thread. Long-term memory carries over.";
    $("log").appendChild(p);
    $("error").textContent = "";
    $("message").focus();
  });
})();
</script>
</body>
</html>
"""


def add_playground(app: FastAPI, path: str = "/agent/playground/") -> None:
    """Serve the chat page at ``path`` (it posts to the ``invoke`` route beside it)."""

    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE, headers={"Cache-Control": "no-store"})

    async def redirect() -> RedirectResponse:
        return RedirectResponse(path)

    async def auth(request: Request) -> dict[str, Any]:
        """How the page should name the user: dev mode (and its default user) or keys."""
        authenticator = getattr(request.app.state, "authenticator", None)
        dev = bool(getattr(authenticator, "dev_mode", True))
        return {"dev_mode": dev, "default_user": getattr(authenticator, "default_user", None) if dev else None}

    app.add_api_route(path, page, methods=["GET"], include_in_schema=False)
    app.add_api_route(f"{path}auth", auth, methods=["GET"], include_in_schema=False)
    app.add_api_route(path.rstrip("/"), redirect, methods=["GET"], include_in_schema=False)
