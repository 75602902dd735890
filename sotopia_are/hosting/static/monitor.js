// The monitor page: the sessions of the study, refreshed every few seconds.
"use strict";
(function () {
  const KEY = "sotopia-are-monitor-token";
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("t");
  if (fromHash) {
    sessionStorage.setItem(KEY, fromHash);
    history.replaceState(null, "", location.pathname + location.search);
  }
  const token = sessionStorage.getItem(KEY);
  function cell(content) { const td = document.createElement("td"); td.textContent = content; return td; }
  async function refresh() {
    const response = await fetch("api/monitor", { headers: { Authorization: "Bearer " + token } });
    if (response.status !== 200) { document.getElementById("status").textContent = "Not allowed."; return; }
    const data = await response.json();
    document.getElementById("status").textContent = data.sessions.length + " sessions";
    document.querySelector("#sessions tbody").replaceChildren(...data.sessions.map((s) => {
      const row = document.createElement("tr");
      const seats = s.seats.map((seat) => seat.name + " (" + seat.player + ")"
        + (seat.player === "human" ? (seat.arrived ? " here" : " not here") : "")
        + (seat.acting ? ", acting" : "") + (seat.timeouts ? ", " + seat.timeouts + " timeouts" : ""));
      row.append(cell(s.session), cell(s.episode_id), cell(s.state + (s.error ? ": " + s.error : "")),
        cell(s.entries), cell(seats.join("; ")));
      return row;
    }));
  }
  refresh();
  setInterval(refresh, 3000);
})();
