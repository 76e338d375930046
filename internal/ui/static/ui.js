// rukpakctl ui: live updates. The server streams the count of changes its
// watches saw: "version" when the stream opens, "change" after each one.
// The page was rendered at data-version; when the stream says otherwise
// the page fetches itself once and swaps its <main> for the new one.
// Nothing here reads values from the cluster into markup: the HTML is
// rendered, and escaped, by the server.
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
    busy = true;
    // A page that shows a POST's outcome is fetched again by GET: the
    // server answers 405 and the page stays as it is.
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("live");
        var cur = document.getElementById("live");
        if (next && cur) {
          cur.replaceWith(document.importNode(next, true));
          body.dataset.version = doc.body.dataset.version;
        }
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }

  function schedule() {
    if (document.querySelector("form.filters :focus")) {
      return;
    }
    if (!pending) { pending = setTimeout(refresh, 250); }
  }

  var url = body.dataset.base + "/events";
  if (body.dataset.follows) {
    url += "?bd=" + encodeURIComponent(body.dataset.follows);
  }
  var es = new EventSource(url);
  es.addEventListener("open", function () {
    if (status) { status.textContent = "live"; status.className = "live on"; }
  });
  es.addEventListener("error", function () {
    if (status) { status.textContent = "reconnecting"; status.className = "live off"; }
  });
  es.addEventListener("version", function (e) {
    if (e.data !== body.dataset.version) { schedule(); }
  });
  es.addEventListener("change", schedule);
})();
