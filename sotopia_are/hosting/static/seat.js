// The participant page: a thin client of the participant API (docs/hosting.md).
// All text is set with textContent, never as HTML.
"use strict";
(function () {
  const KEY = "sotopia-are-seat-token";
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("t");
  if (fromHash) {
    sessionStorage.setItem(KEY, fromHash);
    history.replaceState(null, "", location.pathname + location.search);
  }
  const token = sessionStorage.getItem(KEY);
  const participant = new URLSearchParams(location.search).get("participant") || "";
  const $ = (id) => document.getElementById(id);
  let view = null;
  let deadline = null;

  function headers(json) {
    const h = { Authorization: "Bearer " + token };
    if (json) h["Content-Type"] = "application/json";
    return h;
  }
  async function call(path, body) {
    const options = body === undefined
      ? { headers: headers(false) }
      : { method: "POST", headers: headers(true), body: JSON.stringify(body) };
    const response = await fetch(path, options);
    return { status: response.status, body: await response.json() };
  }
  function text(tag, content, className) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (className) node.className = className;
    return node;
  }
  function render(v) {
    view = v;
    $("status").textContent = v.state === "waiting"
      ? "Waiting for the others to arrive…"
      : v.your_turn ? "It is your turn." : (v.state === "running" ? "Waiting for the others…" : "");
    $("context").hidden = false;
    $("seat").textContent = "You are " + v.seat;
    $("scenario").textContent = v.scenario;
    $("background").textContent = v.background;
    $("goal").textContent = v.goal;
    $("others").replaceChildren(...v.others.map((o) => text("li", o.name + ": " + o.background)));
    $("transcript").replaceChildren(...v.transcript.map((e) => text(
      "li", e.text, (e.private ? "private " : "") + (e.sender === v.seat ? "mine" : ""))));
    $("composer").hidden = !v.your_turn;
    deadline = v.time_left === null ? null : Date.now() + v.time_left * 1000;
    if (v.turn) renderComposer(v.turn.legal, v);
    const over = v.state === "finished" || v.state === "failed";
    $("done").hidden = !over;
    if (over) {
      $("outcome").textContent = v.outcome ? v.outcome.reason : "";
      $("completion").textContent = v.completion_code ? "Your completion code: " + v.completion_code : "";
    }
  }
  function renderComposer(legal, v) {
    const conversation = Boolean(legal.actions);
    $("conversation-controls").hidden = !conversation;
    $("game-controls").hidden = conversation;
    $("send").hidden = !conversation;
    if (conversation) {
      $("action-type").replaceChildren(...legal.actions.map((a) => {
        const option = text("option", a); option.value = a; return option;
      }));
      $("recipients").replaceChildren(text("legend", "Private to (leave empty for everyone)"),
        ...legal.recipients.map((name) => {
          const label = document.createElement("label");
          const box = document.createElement("input");
          box.type = "checkbox"; box.value = name;
          label.append(box, document.createTextNode(" " + name + " "));
          return label;
        }));
      return;
    }
    $("game-controls").replaceChildren(...legal.moves.map((m) => moveControl(m, v)));
  }
  function moveControl(m, v) {
    const box = document.createElement("div");
    box.append(text("p", m.name + (m.description ? ": " + m.description : "")));
    if (m.kind === "target") {
      for (const target of m.targets) {
        const b = text("button", m.name + " " + target); b.type = "button";
        b.onclick = () => send({ move: m.name, target: target });
        box.append(b);
      }
    } else if (m.kind === "offer" || m.kind === "speak") {
      const input = document.createElement("input");
      if (m.kind === "offer") { input.type = "number"; input.min = m.amount_min; input.max = m.amount_max; }
      const b = text("button", m.name); b.type = "button";
      b.onclick = () => send(m.kind === "offer"
        ? { move: m.name, amount: Number(input.value) } : { move: m.name, argument: input.value });
      box.append(input, b);
    } else {
      const b = text("button", m.name); b.type = "button";
      b.onclick = () => send({ move: m.name });
      box.append(b);
    }
    return box;
  }
  async function send(action) {
    $("problem").textContent = "";
    const clientId = crypto.randomUUID();
    const answer = await call("api/seat/actions",
      { client_id: clientId, turn: view.turn ? view.turn.number : null, action: action });
    if (!answer.body.accepted) $("problem").textContent = answer.body.error || "not accepted";
  }
  $("action-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const to = [...document.querySelectorAll("#recipients input:checked")].map((b) => b.value);
    const action = { action_type: $("action-type").value, argument: $("argument").value };
    if (to.length) action.to = to;
    send(action).then(() => { $("argument").value = ""; });
  });
  setInterval(() => {
    $("countdown").textContent = deadline === null ? ""
      : "(" + Math.max(0, Math.round((deadline - Date.now()) / 1000)) + " s left)";
  }, 500);
  async function follow() {
    if (!token) { $("status").textContent = "This link has no seat token."; return; }
    let answer = await call("api/seat/join", { participant: participant });
    if (answer.status !== 200) { $("status").textContent = "This link does not open a seat."; return; }
    render(answer.body);
    for (;;) {
      if (view.state === "finished" || view.state === "failed") return;
      try {
        answer = await call("api/seat/changes?since=" + view.version);
        if (answer.status === 200) render(answer.body);
      } catch (error) {
        $("status").textContent = "Connection lost; retrying…";
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  }
  follow();
})();
