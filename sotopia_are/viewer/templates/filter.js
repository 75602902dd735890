// The static file's filters: the same rules as sotopia_are.viewer.EpisodeFilter, on
// the rows' data attributes (the page has no server to ask).
(function () {
  "use strict";
  var form = document.getElementById("filters");
  function number(value) {
    return value === null || value.trim() === "" ? NaN : Number(value);
  }
  function apply() {
    var data = new FormData(form);
    var tag = data.get("tag"), model = data.get("model"), status = data.get("status");
    var low = number(data.get("min_score")), high = number(data.get("max_score"));
    var shown = 0;
    document.querySelectorAll("tr.episode-row").forEach(function (row) {
      var d = row.dataset;
      var scores = d.scores ? d.scores.split(" ").map(Number) : [];
      var ok = (!tag || d.tag === tag) &&
        (!model || d.models.split("\n").indexOf(model) >= 0) &&
        (!status || d.status === status);
      if (ok && !(isNaN(low) && isNaN(high))) {
        ok = scores.some(function (s) {
          return (isNaN(low) || s >= low) && (isNaN(high) || s <= high);
        });
      }
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.getElementById("shown").textContent = String(shown);
  }
  form.addEventListener("input", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); apply(); });
})();
