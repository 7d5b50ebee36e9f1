/* crcr HUD live updates: poll a tiny change marker, redraw only what changed.
 *
 * Every few seconds the page asks /api/crcr/freshness (an ETag'd JSON of a few dozen
 * bytes; the browser revalidates it, so an unchanged store costs a 304). When the store's
 * version differs from the one this page was rendered at, the page fetches its own URL
 * again and swaps in the top-level blocks of <main> whose HTML changed, keyed by what they
 * show (a backend, a level, a stat). A block under the pointer, holding the keyboard focus
 * or a text selection is left alone until the reader moves on, so nothing changes under
 * the cursor. Without JavaScript the page is the server-rendered snapshot it always was.
 */
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  if (!status || !window.fetch || !window.DOMParser) return;
  var age = document.getElementById("live-age");
  var pause = document.getElementById("live-pause");
  var announce = document.getElementById("live-announce");
  var main = status.parentElement;
  var url = status.getAttribute("data-live-url");
  var seconds = Math.max(1, Number(status.getAttribute("data-live-seconds")) || 15);
  var version = status.getAttribute("data-live-version");
  var checkedAt = Date.now();
  var paused = false;
  var failing = false;
  var pending = null;
  var timer = null;

  function say(text) {
    announce.textContent = text;
  }

  function showAge() {
    var s = Math.round((Date.now() - checkedAt) / 1000);
    var when = s < 60 ? s + " s ago" : Math.floor(s / 60) + " min ago";
    var state = paused ? " · paused" : failing ? " · cannot reach the server, retrying" : "";
    var held = pending ? " · new results wait until the pointer or focus moves off them" : "";
    age.textContent = "updated " + when + state + held;
  }

  function keyOf(el, seen) {
    var own = el.id || el.getAttribute("data-repo") || el.getAttribute("data-level") ||
      el.getAttribute("data-stat") || el.getAttribute("aria-label");
    var base = el.tagName + "." + el.className + (own ? "#" + own : "");
    seen[base] = (seen[base] || 0) + 1;
    return base + "@" + seen[base];
  }

  function blocks(root) {
    var seen = {};
    var out = [];
    for (var i = 0; i < root.children.length; i++) {
      var el = root.children[i];
      if (el.id !== "live-status") out.push({ key: keyOf(el, seen), el: el });
    }
    return out;
  }

  function inUse(el) {
    if (el.matches(":hover") || el.contains(document.activeElement)) return true;
    var selection = window.getSelection();
    return !!(selection && !selection.isCollapsed && el.contains(selection.anchorNode));
  }

  function keepOpenDetails(from, to) {
    var before = from.querySelectorAll("details");
    var after = to.querySelectorAll("details");
    for (var i = 0; i < before.length && i < after.length; i++) {
      if (before[i].open) after[i].open = true;
    }
  }

  /* Swap changed blocks in; returns true when some block had to wait. */
  function apply(fresh) {
    var old = {};
    blocks(main).forEach(function (b) { old[b.key] = b.el; });
    var held = false;
    var changed = false;
    var anchor = status;
    blocks(fresh).forEach(function (b) {
      var node = old[b.key];
      delete old[b.key];
      if (!node) {
        node = document.importNode(b.el, true);
        changed = true;
      } else if (node.outerHTML !== b.el.outerHTML) {
        if (inUse(node)) {
          held = true;
        } else {
          var next = document.importNode(b.el, true);
          keepOpenDetails(node, next);
          node.replaceWith(next);
          node = next;
          changed = true;
        }
      }
      if (anchor.nextElementSibling !== node) anchor.after(node);
      anchor = node;
    });
    Object.keys(old).forEach(function (key) {
      if (inUse(old[key])) held = true;
      else { old[key].remove(); changed = true; }
    });
    if (changed) say("New results shown.");
    return held;
  }

  function retryHeld() {
    if (pending && !paused) pending = apply(pending) ? pending : null;
  }

  function check() {
    timer = null;
    if (paused) return;
    if (document.hidden) return schedule();
    fetch(url, { cache: "no-cache", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (fresh) {
        if (fresh.version === version) return null;
        return fetch(location.href, { cache: "no-cache" }).then(function (r) {
          if (!r.ok) throw new Error(r.status);
          return r.text();
        });
      })
      .then(function (html) {
        failing = false;
        checkedAt = Date.now();
        if (html === null || paused) return; // paused mid-fetch: fetched again on resume
        var doc = new DOMParser().parseFromString(html, "text/html");
        var marker = doc.getElementById("live-status");
        var fresh = doc.querySelector("main");
        if (!marker || !fresh) return;
        version = marker.getAttribute("data-live-version");
        pending = apply(fresh) ? fresh : null;
      })
      .catch(function () { failing = true; })
      .then(function () { showAge(); schedule(); });
  }

  function schedule() {
    if (!paused && timer === null) timer = setTimeout(check, seconds * 1000);
  }

  pause.addEventListener("click", function () {
    paused = !paused;
    pause.textContent = paused ? "Resume live updates" : "Pause live updates";
    say(paused ? "Live updates paused." : "Live updates resumed.");
    if (timer !== null) { clearTimeout(timer); timer = null; }
    if (!paused) check();
    showAge();
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !paused && timer !== null) { clearTimeout(timer); check(); }
  });
  setInterval(function () { retryHeld(); showAge(); }, 1000);
  status.hidden = false;
  showAge();
  schedule();
})();
