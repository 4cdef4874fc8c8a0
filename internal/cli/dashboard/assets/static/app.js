// The dashboard's one script: it swaps in what the server pushes (server-sent events, sent when
// a watch saw a change) and filters the fleet table. Without it the page still shows the state
// at load.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var state = document.getElementById("live-state");
  var filter = document.getElementById("filter");

  function setState(s) {
    state.textContent = s;
    state.dataset.state = s;
  }

  function applyFilter() {
    if (!filter) return;
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    live.querySelectorAll("tbody tr[data-workload]").forEach(function (row) {
      var text = row.textContent.toLowerCase();
      row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  }

  if (filter) {
    var params = new URLSearchParams(location.search);
    filter.value = params.get("q") || "";
    filter.addEventListener("input", function () {
      var url = new URL(location.href);
      if (filter.value) url.searchParams.set("q", filter.value); else url.searchParams.delete("q");
      history.replaceState(null, "", url);
      applyFilter();
    });
    applyFilter();
  }

  if (!live || !live.dataset.stream || !window.EventSource) return;
  var updates = 0;
  var source = new EventSource(live.dataset.stream);
  source.addEventListener("open", function () { setState("live"); });
  // The browser reconnects by itself, unless the server refused the stream (the dashboard
  // restarted with another token, or serves as many live pages as it may): then only a reload does.
  source.addEventListener("error", function () {
    setState(source.readyState === EventSource.CLOSED ? "stopped: reload" : "reconnecting");
  });
  source.addEventListener("update", function (e) {
    live.innerHTML = e.data;
    updates++;
    live.dataset.updates = String(updates);
    applyFilter();
    setState("live");
  });
})();
