/* crcr HUD theme: light, dark, or "system" (follow prefers-color-scheme), remembered per
   browser in localStorage. Loaded blocking in <head> so a stored choice is on <html>
   before the first paint (no flash of the other theme); a file rather than an inline
   script because the pages' Content-Security-Policy forbids inline script. Without
   script the toggle stays hidden and the stylesheet follows the system. */
(function () {
  "use strict";
  var KEY = "crcr-hud-theme";
  var root = document.documentElement;

  function stored() {
    try {
      var value = window.localStorage.getItem(KEY);
      return value === "light" || value === "dark" ? value : "system";
    } catch (e) {
      return "system"; // storage blocked: the system decides
    }
  }

  function remember(choice) {
    try {
      if (choice === "system") window.localStorage.removeItem(KEY);
      else window.localStorage.setItem(KEY, choice);
    } catch (e) {
      /* not remembered, still applied to this page */
    }
  }

  function apply(choice) {
    if (choice === "system") root.removeAttribute("data-theme");
    else root.setAttribute("data-theme", choice);
    var buttons = document.querySelectorAll("[data-theme-choice]");
    for (var i = 0; i < buttons.length; i++) {
      var pressed = buttons[i].getAttribute("data-theme-choice") === choice;
      buttons[i].setAttribute("aria-pressed", pressed ? "true" : "false");
    }
  }

  apply(stored());

  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.querySelector("[data-theme-toggle]");
    if (!toggle) return;
    apply(stored());
    toggle.hidden = false;
    toggle.addEventListener("click", function (event) {
      var button = event.target.closest("[data-theme-choice]");
      if (!button) return;
      var choice = button.getAttribute("data-theme-choice");
      remember(choice);
      apply(choice);
    });
  });

  // Another tab of the HUD changed the theme: follow it.
  window.addEventListener("storage", function (event) {
    if (event.key === KEY) apply(stored());
  });
})();
