// The participant page: a thin client of the participant API (docs/hosting.md). It shows
// the consent text first, takes the seat when the person agrees (a seat's link `#t=`, or
// the waiting room's `#e=`: then the server gives the next free seat), then keeps the
// seat's view current by long-polling `changes` and offers only the legal actions of its
// turn. All text is set with textContent, never as HTML (and the CSP runs no inline script).
"use strict";
(function () {
  const KEY = "sotopia-are-seat-token";
  const ENTRY = "sotopia-are-entry-token";
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("t") || fragment.get("e")) {
    // The token leaves the address bar (and the history) at once; the tab keeps it.
    if (fragment.get("t")) sessionStorage.setItem(KEY, fragment.get("t"));
    if (fragment.get("e")) sessionStorage.setItem(ENTRY, fragment.get("e"));
    history.replaceState(null, "", location.pathname + location.search);
  }
  let token = sessionStorage.getItem(KEY);
  const entry = sessionStorage.getItem(ENTRY);
  // A crowd-work site's participant id in the link, by the first of these names present
  // (the server keeps only its keyed hash): ours, Prolific's, MTurk's/CloudResearch's.
  const PARTICIPANT_NAMES = ["participant", "PROLIFIC_PID", "workerId", "participantId"];
  const query = new URLSearchParams(location.search);
  const participant = (PARTICIPANT_NAMES.map((name) => query.get(name)).find((v) => v) || "")
    .slice(0, 200);
  const $ = (id) => document.getElementById(id);
  // The conversation's action types as the page names them; "whisper" is a private
  // "speak" to the recipients ticked.
  const KINDS = [
    ["speak", "Say", "What you say to everyone"],
    ["whisper", "Whisper", "What you whisper (only the people you tick see it)"],
    ["non-verbal communication", "Gesture", "A gesture, e.g. nods slowly"],
    ["action", "Act", "What you do, e.g. hands over the seed list"],
    ["none", "Pass", ""],
    ["leave", "Leave", ""],
  ];
  let view = null;
  let deadline = null;
  let composerKey = null; // the turn the composer was built for
  let answeredVersion = -1; // the view version at which this page last answered a turn

  function headers(json, bearer) {
    const h = { Authorization: "Bearer " + bearer };
    if (json) h["Content-Type"] = "application/json";
    return h;
  }
  // `bearer`: the seat's token unless another is given (the waiting room's).
  async function call(path, body, bearer) {
    const who = bearer || token;
    const options = body === undefined
      ? { headers: headers(false, who) }
      : { method: "POST", headers: headers(true, who), body: JSON.stringify(body) };
    const response = await fetch(path, options);
    return { status: response.status, body: await response.json() };
  }
  function text(tag, content, className) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (className) node.className = className;
    return node;
  }
  function button(label, onClick, className) {
    const b = text("button", label, className);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }

  // The consent screen: reading it is not arriving; agreeing takes the seat (a seat's
  // link) or asks the waiting room for one (its link; a seat once given is kept).
  async function start() {
    if (!token && !entry) { $("status").textContent = "This link has no seat token."; return; }
    const intro = await call("api/seat/consent", undefined, token || entry);
    if (intro.status !== 200) { $("status").textContent = "This link does not open a seat."; return; }
    if (intro.body.arrived) { follow(); return; } // a reload: they agreed already
    $("status").textContent = "Please read this first.";
    $("consent-seat").textContent = intro.body.seat ? "Your seat: " + intro.body.seat
      : "You will be given a seat when you agree.";
    $("consent-text").textContent = intro.body.consent;
    $("consent").hidden = false;
    $("agree").addEventListener("click", () => {
      $("consent").hidden = true;
      if (token) follow(); else arrive();
    }, { once: true });
  }

  // The waiting room: the next free seat, in order of arrival; its token then stands in
  // for the room's (a reload goes on with the seat).
  async function arrive() {
    $("status").textContent = "Finding your seat…";
    const answer = await call("api/arrive", { participant: participant }, entry);
    if (answer.status !== 200) {
      $("status").textContent = answer.status === 409 ? "Sorry: every seat of this study is taken."
        : "This link does not open a seat.";
      return;
    }
    token = answer.body.token;
    sessionStorage.setItem(KEY, token);
    sessionStorage.removeItem(ENTRY);
    follow();
  }

  function render(v) {
    if (view !== null && v.version < view.version) return; // an older answer overtaken
    view = v;
    const over = v.state === "finished" || v.state === "failed";
    const mine = v.your_turn && v.version > answeredVersion;
    $("turnbar").className = mine ? "yours" : "";
    $("status").textContent = over ? "The session is over."
      : v.state === "waiting" ? "Waiting for the others to arrive…"
      : mine ? "Your turn" + (v.turn.phase ? " (" + v.turn.phase + ")" : "")
      : "Waiting for the others…";
    $("context").hidden = false;
    $("conversation").hidden = false;
    $("seat").textContent = "You are " + v.seat;
    $("scenario").textContent = v.scenario;
    $("background").textContent = v.background;
    $("goal").textContent = v.goal;
    $("others").replaceChildren(...v.others.map((o) => text("li", o.name + ": " + o.background)));
    renderTranscript(v);
    deadline = mine && v.time_left !== null ? Date.now() + v.time_left * 1000 : null;
    tick();
    const key = mine ? JSON.stringify(v.turn) : null;
    if (key !== composerKey) {
      composerKey = key;
      if (mine) {
        renderComposer(v.turn.legal, v);
        // Which view the composer answers (tests and bots driving the page wait for it).
        $("composer").dataset.version = String(v.version);
        $("composer").hidden = false;
        $("composer").scrollIntoView({ block: "nearest" });
      }
    }
    $("composer").hidden = !mine;
    $("done").hidden = !over;
    if (over) renderEnd(v);
  }

  function renderTranscript(v) {
    $("empty").hidden = v.transcript.length > 0;
    $("transcript").replaceChildren(...v.transcript.map((e) => {
      const item = document.createElement("li");
      if (e.sender === v.seat) item.classList.add("mine");
      if (e.private) {
        item.classList.add("private");
        const who = (name) => (name === v.seat ? "you" : name);
        const others = e.to.filter((name) => name !== e.sender);
        item.append(text("span", others.length === 0 ? "private: only " + who(e.sender)
          : "private: " + who(e.sender) + " → " + others.map(who).join(", "), "marker"));
      }
      item.append(text("span", e.text, "line"));
      return item;
    }));
  }

  function renderEnd(v) {
    $("outcome").textContent = v.outcome ? v.outcome.reason : "";
    const code = v.completion_code || "";
    const link = $("completion-link");
    if (/^https?:\/\//i.test(code)) {
      $("completion").textContent = "Thank you. Follow this link to finish:";
      link.href = code;
      link.hidden = false;
    } else {
      $("completion").textContent = code ? "Your completion code: " + code : "Thank you.";
      link.hidden = true;
    }
  }

  function renderComposer(legal, v) {
    $("problem").textContent = "";
    const conversation = Array.isArray(legal.actions);
    $("action-form").hidden = !conversation;
    $("game-controls").hidden = conversation;
    $("composer-title").textContent = "Your turn" + (v.turn.phase ? " (" + v.turn.phase + ")" : "");
    if (conversation) conversationComposer(legal);
    else $("game-controls").replaceChildren(...legal.moves.map(moveControl));
  }

  function conversationComposer(legal) {
    const offered = KINDS.filter(([kind]) => kind === "whisper"
      ? legal.actions.includes("speak") && legal.recipients.length > 0
      : legal.actions.includes(kind));
    $("kinds").replaceChildren(text("legend", "What do you do?"), ...offered.map(([kind, label], i) => {
      const choice = document.createElement("label");
      choice.className = "choice";
      const radio = document.createElement("input");
      radio.type = "radio"; radio.name = "kind"; radio.value = kind; radio.checked = i === 0;
      radio.addEventListener("change", kindChanged);
      choice.append(radio, document.createTextNode(" " + label));
      return choice;
    }));
    $("recipients").replaceChildren(text("legend", "Whisper to (only they will see it)"),
      ...legal.recipients.map((name) => {
        const choice = document.createElement("label");
        choice.className = "choice";
        const box = document.createElement("input");
        box.type = "checkbox"; box.name = "to"; box.value = name;
        choice.append(box, document.createTextNode(" " + name));
        return choice;
      }));
    $("argument").value = "";
    kindChanged();
  }

  function chosenKind() {
    const checked = document.querySelector("#kinds input:checked");
    return checked ? checked.value : null;
  }

  function kindChanged() {
    const kind = chosenKind();
    const entry = KINDS.find(([k]) => k === kind);
    const wordless = kind === "none" || kind === "leave";
    $("recipients").hidden = kind !== "whisper";
    $("argument").hidden = wordless;
    $("argument-label").hidden = wordless;
    $("argument-label").textContent = entry ? entry[2] : "";
    $("send").textContent = kind === "leave" ? "Leave the conversation"
      : kind === "none" ? "Pass this turn" : "Send";
  }

  $("action-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const kind = chosenKind();
    if (kind === null) return;
    const action = { action_type: kind === "whisper" ? "speak" : kind };
    if (kind !== "none" && kind !== "leave") {
      action.argument = $("argument").value.trim();
      if (!action.argument) { $("problem").textContent = "Write something first."; return; }
    }
    if (kind === "whisper") {
      action.to = [...document.querySelectorAll("#recipients input:checked")].map((b) => b.value);
      if (!action.to.length) { $("problem").textContent = "Tick whom to whisper to."; return; }
    }
    send(action);
  });

  function moveControl(m) {
    const box = document.createElement("fieldset");
    box.className = "move";
    box.dataset.move = m.name;
    box.dataset.kind = m.kind;
    box.append(text("legend", m.name));
    if (m.description) box.append(text("p", m.description, "hint"));
    if (m.kind === "target") {
      const row = text("div", "", "targets");
      row.append(...m.targets.map((target) => button(target,
        () => send({ move: m.name, target: target }), "target")));
      box.append(row);
    } else if (m.kind === "offer") {
      const input = document.createElement("input");
      input.type = "number"; input.inputMode = "numeric"; input.step = "1";
      input.min = String(m.amount_min); input.max = String(m.amount_max);
      input.setAttribute("aria-label", m.name + " amount");
      box.append(input, text("span", " (" + m.amount_min + "–" + m.amount_max + ") ", "hint"),
        button(m.name, () => {
          const amount = Number(input.value);
          if (input.value === "" || !Number.isInteger(amount)
            || amount < m.amount_min || amount > m.amount_max) {
            $("problem").textContent = "Offer a whole number from " + m.amount_min + " to "
              + m.amount_max + ".";
            return;
          }
          send({ move: m.name, amount: amount });
        }));
    } else if (m.kind === "speak") {
      const words = document.createElement("textarea");
      words.rows = 3; words.maxLength = 2000;
      words.setAttribute("aria-label", m.name);
      box.append(words, button(m.name, () => {
        const said = words.value.trim();
        if (!said) { $("problem").textContent = "Write something first."; return; }
        send({ move: m.name, argument: said });
      }));
    } else {
      box.append(button(m.name, () => send({ move: m.name })));
    }
    return box;
  }

  function setBusy(busy) {
    for (const control of $("composer").querySelectorAll("button, input, textarea")) {
      control.disabled = busy;
    }
  }

  async function send(action) {
    $("problem").textContent = "";
    setBusy(true);
    // One client id per decision: a retry after a dropped connection is a repeat.
    const body = { client_id: crypto.randomUUID(), turn: view.turn.number, action: action };
    const asked = view.version;
    let answer = null;
    for (let attempt = 0; attempt < 3 && answer === null; attempt++) {
      try {
        answer = await call("api/seat/actions", body);
      } catch (error) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    setBusy(false);
    if (answer === null) { $("problem").textContent = "Could not reach the server; try again."; return; }
    if (answer.body.accepted) {
      answeredVersion = Math.max(answeredVersion, asked);
      composerKey = null;
      render(view);
    } else {
      $("problem").textContent = answer.body.error || "That was not accepted.";
    }
  }

  function tick() {
    if (deadline === null) { $("countdown").textContent = ""; return; }
    const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    $("countdown").textContent = "· " + Math.floor(left / 60) + ":"
      + String(left % 60).padStart(2, "0") + " left";
    $("countdown").className = left <= 15 ? "urgent" : "";
  }
  setInterval(tick, 500);

  async function follow() {
    let answer = await call("api/seat/join", { participant: participant });
    if (answer.status !== 200) { $("status").textContent = "This link does not open a seat."; return; }
    render(answer.body);
    for (;;) {
      if (view.state === "finished" || view.state === "failed") return;
      try {
        answer = await call("api/seat/changes?since=" + view.version);
        if (answer.status === 200) render(answer.body);
        else await new Promise((resolve) => setTimeout(resolve, 2000));
      } catch (error) {
        $("status").textContent = "Connection lost; retrying…";
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  }
  start();
})();
