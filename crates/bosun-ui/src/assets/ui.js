// bosun dashboard: the live parts. The server renders every part; this script only keeps a
// page current without a reload: it listens to the page's Server-Sent Events (fed by kube
// watches) and swaps in the parts the server sends again, by element id. Without JavaScript
// the pages still read; a reload shows changes.
(function () {
  "use strict";
  var main = document.querySelector("main[data-live]");
  if (!main || !window.EventSource) return;
  var status = document.getElementById("live-status");
  var say = function (text) { if (status) status.textContent = text; };
  say("Connecting for live updates…");
  var source = new EventSource(main.getAttribute("data-live"));
  source.addEventListener("open", function () { say("Live: updates as the cluster changes."); });
  source.addEventListener("error", function () { say("Live updates interrupted; reconnecting…"); });
  source.addEventListener("gone", function (event) { say(event.data); source.close(); });
  source.addEventListener("update", function (event) {
    var update = JSON.parse(event.data);
    // Keep the keyboard where it was when the part holding it is replaced.
    var focused = document.activeElement && document.activeElement.id;
    (update.replace || []).forEach(function (part) {
      var element = document.getElementById(part.id);
      if (element) {
        element.outerHTML = part.html;
      } else if (part.parent) {
        var parent = document.getElementById(part.parent);
        if (parent) parent.insertAdjacentHTML("beforeend", part.html);
      }
    });
    (update.remove || []).forEach(function (id) {
      var element = document.getElementById(id);
      if (element) element.remove();
    });
    if (focused && document.activeElement !== document.getElementById(focused)) {
      var again = document.getElementById(focused);
      if (again) again.focus();
    }
    main.setAttribute("data-updates", String(Number(main.getAttribute("data-updates") || "0") + 1));
  });
})();
