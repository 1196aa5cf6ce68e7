"""The page of ``searchain serve``: a question box, the run's progress, and its tree as it grows.

One self-contained page (inline CSS and script, nothing fetched from elsewhere). Its script posts
the question to ``runs``, then follows the run's events over server-sent events (``EventSource``,
which reconnects with ``Last-Event-ID`` by itself) and swaps in the tree the server drew for each
step (:func:`~searchain_graph.viz.render_tree`, ``"fragment"``: every text from the run is escaped
by the server, so the script inserts no text of its own as markup). The address keeps the run's
id (``?run=ID``), so a reload follows the same run instead of asking again. When the server has a
token, the page carries it and sends it with each request.

The list under it (``GET runs``) names the runs the server keeps, past ones too when it keeps them
in a database (``searchain serve --db``); a click follows one.

Hooks for tests: ``form#ask``, ``input#question``, ``button#submit``, ``ol#log`` (one ``li`` per
progress line, and one ``li.verdict`` per IR verdict), ``div#view`` (the tree:
``div#tree[data-done]``), ``p#error``, ``ul#past`` (one ``li[data-run][data-status]`` per run),
``div#review`` (a correction waiting for a person, with ``button#accept``, ``button#reject``,
``input#edit-answer`` and ``button#edit``), and ``body[data-state]`` (``idle``, ``running``,
``review``, ``done`` or ``error``).
"""

from __future__ import annotations

import json
from html import escape

from searchain_graph.viz.html import STYLE

__all__ = ["app_page"]

_APP_STYLE = """
form#ask{display:flex;gap:.5rem;margin:.4rem 0 .8rem}
#question{flex:1;font:inherit;padding:.5rem .7rem;border:1px solid #b9c2ce;border-radius:6px}
#submit{font:inherit;padding:.5rem 1rem;border:0;border-radius:6px;background:#2d5ea8;color:#fff;cursor:pointer}
#submit:disabled{background:#8aa4c8;cursor:wait}
#log{font:12px/1.4 ui-monospace,monospace;color:#4a5563;background:#fff;border:1px solid #d5dae1;
  border-radius:8px;padding:.4rem .8rem .4rem 2rem;margin:.4rem 0;max-height:12rem;overflow:auto;white-space:pre}
#log:empty{display:none}
#error{color:#9a2a1b;font-weight:600}
#review{background:#fff8e6;border:1px solid #e0c27a;border-radius:8px;padding:.5rem .8rem;margin:.4rem 0}
#review blockquote{margin:.3rem 0;color:#4a5563;font-size:.85rem;max-height:8rem;overflow:auto}
.about{color:#4a5563;font-size:.85rem}
"""

_SCRIPT = """
(() => {
  const TOKEN = __TOKEN__;
  const withToken = (url) => TOKEN ? url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN) : url;
  const form = document.getElementById("ask"), input = document.getElementById("question");
  const button = document.getElementById("submit"), log = document.getElementById("log");
  const view = document.getElementById("view"), error = document.getElementById("error");
  let source = null;
  const setState = (s) => { document.body.dataset.state = s; button.disabled = s === "running"; };
  const fail = (message) => { error.textContent = message; setState("error"); if (source) source.close(); };
  function follow(runId, eventsUrl) {
    if (source) source.close();
    log.replaceChildren(); error.textContent = ""; setState("running");
    source = new EventSource(withToken(eventsUrl));
    const show = (ev) => {
      const data = JSON.parse(ev.data);
      if (data.html) view.innerHTML = data.html;
      if (data.progress) { const li = document.createElement("li"); li.textContent = data.progress;
        log.append(li); log.scrollTop = log.scrollHeight; }
      return data;
    };
    source.addEventListener("update", show);
    source.addEventListener("verdict", (ev) => { const li = document.createElement("li");
      li.className = "verdict"; li.textContent = "  " + JSON.parse(ev.data).verdict; log.append(li); });
    source.addEventListener("review", (ev) => { const data = show(ev); ask(runId, data.review); });
    source.addEventListener("done", (ev) => { show(ev); source.close(); setState("done"); });
    source.addEventListener("failed", (ev) => fail("The run failed: " + JSON.parse(ev.data).error));
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) fail("Lost the run: the server stopped or no longer keeps it.");
    };
  }
  const panel = document.getElementById("review");
  const fmt = (f) => (typeof f === "number" ? f.toFixed(2) : String(f));
  function ask(runId, r) {
    document.getElementById("review-what").textContent = "Round " + r.round + ", node " + r.node + ": \u201c" +
      r.query + "\u201d. The LLM answered \u201c" + r.llm_answer + "\u201d; IR read \u201c" + r.g +
      "\u201d with f = " + fmt(r.f) + " > \u03b8 = " + fmt(r.theta) + ".";
    document.getElementById("review-passage").textContent = (r.passage.title ? r.passage.title + ": " : "") +
      r.passage.text;
    panel.dataset.run = runId; panel.dataset.review = r.id || ("round-" + r.round + "-node-" + r.node);
    panel.hidden = false; setState("review");
  }
  async function decide(decision, answer) {
    const value = {decision: decision, id: panel.dataset.review};
    if (answer !== undefined) value.answer = answer;
    const headers = {"content-type": "application/json"};
    if (TOKEN) headers.authorization = "Bearer " + TOKEN;
    let reply, body;
    try {
      reply = await fetch("runs/" + encodeURIComponent(panel.dataset.run) + "/review",
        {method: "POST", headers, body: JSON.stringify(value)});
      body = await reply.json();
    } catch (e) { fail("Could not reach the server: " + e); return; }
    if (!reply.ok) { error.textContent = body.error || ("HTTP " + reply.status); return; }
    error.textContent = ""; panel.hidden = true; setState("running");
  }
  document.getElementById("accept").addEventListener("click", () => decide("accept"));
  document.getElementById("reject").addEventListener("click", () => decide("reject"));
  document.getElementById("edit").addEventListener("click",
    () => decide("edit", document.getElementById("edit-answer").value));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setState("running"); error.textContent = "";
    let reply, body;
    try {
      const headers = {"content-type": "application/json"};
      if (TOKEN) headers.authorization = "Bearer " + TOKEN;
      reply = await fetch("runs", {method: "POST", headers, body: JSON.stringify({question: input.value})});
      body = await reply.json();
    } catch (e) { fail("Could not reach the server: " + e); return; }
    if (!reply.ok) { fail(body.error || ("HTTP " + reply.status)); return; }
    history.replaceState(null, "", withToken("?run=" + encodeURIComponent(body.run_id)));
    follow(body.run_id, body.events);
  });
  const open = (runId) => {
    history.replaceState(null, "", withToken("?run=" + encodeURIComponent(runId)));
    follow(runId, "runs/" + encodeURIComponent(runId) + "/events");
  };
  async function listRuns() {
    const headers = TOKEN ? {authorization: "Bearer " + TOKEN} : {};
    let body;
    try { body = await (await fetch("runs", {headers})).json(); } catch (e) { return; }
    const past = document.getElementById("past");
    past.replaceChildren(...(body.runs || []).map((run) => {
      const li = document.createElement("li"), a = document.createElement("a");
      li.dataset.run = run.run_id; li.dataset.status = run.status;
      a.href = withToken("?run=" + encodeURIComponent(run.run_id));
      a.textContent = run.question + " (" + run.status + (run.answer ? ": " + run.answer : "") + ")";
      a.addEventListener("click", (ev) => { ev.preventDefault(); open(run.run_id); });
      li.append(a); return li;
    }));
  }
  const again = new URLSearchParams(location.search).get("run");
  if (again) follow(again, "runs/" + encodeURIComponent(again) + "/events");
  listRuns();
})();
"""


def app_page(*, title: str, about: str, max_question_chars: int, token: str | None = None) -> str:
    """The whole page, with ``about`` (the model, index and reader) shown under the title.

    With a ``token`` (letters, digits and ``._~-`` only: see
    :func:`~searchain_graph.serve.guard.check_token`), the script sends it with every request:
    ``Authorization: Bearer`` on its ``POST``, ``?token=`` on its event streams and in the address
    it keeps for a reload. Only a request that carried the token gets this page.
    """
    script = _SCRIPT.replace("__TOKEN__", json.dumps(token))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}{_APP_STYLE}</style></head>"
        '<body data-state="idle"><main>'
        f'<h1>{escape(title)}</h1><p class="about">{escape(about)}</p>'
        '<form id="ask"><input id="question" name="question" required autofocus '
        f'maxlength="{max_question_chars}" placeholder="A multi-hop question" autocomplete="off">'
        '<button id="submit" type="submit">Ask</button></form>'
        '<p id="error" role="alert"></p><ol id="log"></ol>'
        '<div id="review" hidden><p><strong>IR would correct the LLM.</strong> <span id="review-what"></span></p>'
        '<blockquote id="review-passage"></blockquote>'
        '<button id="accept" type="button">Accept IR\'s answer</button> '
        '<button id="reject" type="button">Keep the LLM\'s answer</button> '
        '<input id="edit-answer" placeholder="or write the answer" autocomplete="off"> '
        '<button id="edit" type="button">Use this answer</button></div>'
        '<div id="view"></div>'
        '<details id="runs"><summary>Runs</summary><ul id="past"></ul></details>'
        f"</main><script>{script}</script></body></html>\n"
    )
