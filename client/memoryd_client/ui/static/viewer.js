// memoryd viewer: search as you type, confirmations before actions, the live health view.
// Plain script, no library: the pages are rendered by the server; this only fetches parts of
// them again and sends a confirmed action. Every URL is relative to <base>, which holds the
// token.
"use strict";

(function () {
  const notice = document.getElementById("notice");

  function say(text, failed) {
    notice.textContent = text;
    notice.className = failed ? "failed" : "done";
    notice.hidden = false;
  }

  // A message kept across the reload that shows an action's result.
  const kept = sessionStorage.getItem("memoryd-notice");
  if (kept) {
    sessionStorage.removeItem("memoryd-notice");
    const parsed = JSON.parse(kept);
    say(parsed.text, parsed.failed);
  }

  // -- Search as you type ------------------------------------------------------------------
  const form = document.getElementById("search");
  const results = document.getElementById("results");
  if (form && results) {
    let timer = null;
    let asked = 0;
    const refresh = function () {
      const query = new URLSearchParams(new FormData(form));
      for (const [name, value] of Array.from(query.entries())) {
        if (!value) query.delete(name);
      }
      const shown = "search" + (query.toString() ? "?" + query.toString() : "");
      history.replaceState(null, "", shown);
      query.set("fragment", "results");
      const mine = ++asked;
      results.setAttribute("aria-busy", "true");
      fetch("search?" + query.toString(), {credentials: "omit"})
        .then(function (reply) { return reply.text(); })
        .then(function (html) {
          if (mine !== asked) return;  // a newer query was typed meanwhile
          results.innerHTML = html;
          results.removeAttribute("aria-busy");
          results.dataset.query = form.elements.q.value;
        })
        .catch(function (error) { say("search failed: " + error, true); });
    };
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 150);
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      clearTimeout(timer);
      refresh();
    });
  }

  // -- Actions: ask, then POST -------------------------------------------------------------
  function act(button) {
    const box = document.createElement("div");
    box.className = "confirm";
    box.setAttribute("role", "alertdialog");
    const text = document.createElement("p");
    text.textContent = button.dataset.confirm;
    const yes = document.createElement("button");
    yes.type = "button";
    yes.className = "confirm-yes danger";
    yes.textContent = "Yes, " + button.textContent.toLowerCase();
    const no = document.createElement("button");
    no.type = "button";
    no.className = "confirm-no";
    no.textContent = "Cancel";
    box.append(text, yes, no);
    button.after(box);
    button.disabled = true;
    no.addEventListener("click", function () { box.remove(); button.disabled = false; });
    yes.addEventListener("click", function () {
      yes.disabled = true;
      no.disabled = true;
      fetch("action/" + button.dataset.action, {
        method: "POST",
        credentials: "omit",
        headers: {"Content-Type": "application/json"},
        body: JSON.stringify({target: button.dataset.target, confirm: true}),
      })
        .then(function (reply) { return reply.json(); })
        .then(function (answer) {
          sessionStorage.setItem("memoryd-notice",
                                 JSON.stringify({text: answer.message, failed: !answer.ok}));
          location.reload();
        })
        .catch(function (error) { say("the action failed: " + error, true); });
    });
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button.action");
    if (button && !button.disabled) act(button);
  });

  // -- Live parts (Health): fetched again every data-every milliseconds ---------------------
  // A part the viewer does not answer for (`memory ui` stopped, or a page it failed on) is
  // marked stale, with a line that says so above what it last showed: an old "healthy" must
  // not read as the daemon's state now. The next poll that is answered clears it.
  function stale(part, why) {
    let note = part.querySelector(":scope > .stale-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "stale-note";
      note.setAttribute("role", "alert");
      part.prepend(note);
      part.dataset.staleSince = new Date().toLocaleTimeString();
    }
    part.classList.add("stale");
    note.textContent = "The viewer is not answering (" + why + ", since " +
      part.dataset.staleSince + "): what follows may be out of date. Is the memory ui command " +
      "still running?";
  }

  document.querySelectorAll(".live[data-fragment]").forEach(function (part) {
    const every = Number(part.dataset.every);
    const poll = function () {
      fetch(part.dataset.fragment, {credentials: "omit"})
        .then(function (reply) {
          if (!reply.ok) throw new Error("it answered " + reply.status);
          return reply.text();
        })
        .then(function (html) {
          part.innerHTML = html;
          part.classList.remove("stale");
          delete part.dataset.staleSince;
          part.dataset.updated = String(Date.now());
        })
        .catch(function (error) {
          stale(part, error instanceof TypeError ? "no connection" : error.message);
        })
        .finally(function () { setTimeout(poll, every); });
    };
    setTimeout(poll, part.dataset.now ? 0 : every);
  });
})();
