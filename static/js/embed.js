// The embedded fleet application: size the iframe to its content, and tell the
// user when the app's session has ended instead of leaving a dead frame.
(function () {
  "use strict";
  var container = document.getElementById("fleet-app");
  if (!container) return;
  var origin = container.dataset.loginOrigin;
  var SLOW_MS = 10000;
  var MIN_HEIGHT = 320;
  var MAX_HEIGHT = 20000;
  var slowTimer = null;

  function frame() { return container.querySelector("iframe"); }

  function notice(name, show) {
    var element = container.querySelector('[data-app-notice="' + name + '"]');
    if (element) element.hidden = !show;
  }

  function reload() {
    if (window.htmx) window.htmx.ajax("GET", container.getAttribute("hx-get"), { target: container });
  }

  window.addEventListener("message", function (event) {
    var iframe = frame();
    // Only the fleet app in our own frame may resize it: check origin and sender.
    if (!iframe || event.origin !== origin || event.source !== iframe.contentWindow) return;
    var data = event.data || {};
    if (data.type !== "fleet-app:height") return;
    clearTimeout(slowTimer);
    notice("slow", false);
    var height = Number(data.height);
    if (height > 0) iframe.style.height = Math.min(Math.max(height, MIN_HEIGHT), MAX_HEIGHT) + "px";
    var ended = data.state === "expired";
    notice("expired", ended);
    iframe.classList.toggle("app-frame__iframe--ended", ended);
  });

  // A new iframe (first load or a reload) that never says hello within SLOW_MS is
  // probably blocked (third-party cookies, a proxy): offer the new-tab link.
  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target !== container || !frame()) return;
    clearTimeout(slowTimer);
    slowTimer = setTimeout(function () { notice("slow", true); }, SLOW_MS);
  });

  // Restored from the back-forward cache, the frame holds a spent key: mint again.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) reload();
  });
})();
