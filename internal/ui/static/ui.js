// rukpakctl ui: live updates. The server sends an event "change" when a
// watch reports one; the page then fetches itself once and swaps its
// <main> for the new one. Nothing here reads values from the cluster into
// markup: the HTML is rendered, and escaped, by the server.
(function () {
  "use strict";
  var body = document.body;
  if (!body || body.dataset.live !== "true" || !window.EventSource) {
    return;
  }
  var status = document.getElementById("live-status");
  var pending = null;
  var busy = false;

  function refresh() {
    pending = null;
    if (busy) {
      pending = setTimeout(refresh, 300);
      return;
    }
    // A page that just POSTed shows its outcome; reload it by GET only.
    busy = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("live");
        var cur = document.getElementById("live");
        if (next && cur) {
          cur.replaceWith(document.importNode(next, true));
        }
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }

  var es = new EventSource(body.dataset.base + "/events");
  es.addEventListener("open", function () {
    if (status) { status.textContent = "live"; status.className = "live on"; }
  });
  es.addEventListener("error", function () {
    if (status) { status.textContent = "reconnecting"; status.className = "live off"; }
  });
  es.addEventListener("change", function () {
    if (document.querySelector("form.filters :focus")) {
      return;
    }
    if (!pending) { pending = setTimeout(refresh, 250); }
  });
})();
