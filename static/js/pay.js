/* Kassa pay page: live updates, copy buttons, countdown, redirect, sandbox simulator.
   Progressive enhancement only: without this file the server-rendered page works (refresh link).
   Live updates poll the public invoice endpoint; when what it says differs from what the page shows,
   the status section is fetched again (?partial=live) and swapped in, without reloading the page. */
(function () {
  "use strict";

  var root = document.getElementById("pay");
  if (!root || !window.fetch) return;

  var text = JSON.parse(document.getElementById("pay-i18n").textContent);
  var announcer = document.getElementById("pay-announcer");
  var apiUrl = root.getAttribute("data-api-url");
  var pageUrl = root.getAttribute("data-page-url");
  var pollMs = Math.max(1000, parseFloat(root.getAttribute("data-poll-seconds") || "3") * 1000);
  var delayMs = pollMs;
  var pollTimer = null;
  var countdownTimer = null;
  var redirectTimer = null;
  var refreshing = false;

  function live() { return document.getElementById("pay-live"); }

  function announce(message) {
    if (!announcer) return;
    announcer.textContent = "";
    window.setTimeout(function () { announcer.textContent = message; }, 50);
  }

  function clock(seconds) {
    var h = Math.floor(seconds / 3600);
    var m = Math.floor((seconds % 3600) / 60);
    var s = seconds % 60;
    var mm = h ? String(m).padStart(2, "0") : String(m);
    return (h ? h + ":" : "") + mm + ":" + String(s).padStart(2, "0");
  }

  /* --- enhancement of a freshly rendered section ------------------------------------------------ */

  function enhance(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("[data-js-only]"), function (el) { el.hidden = false; });
    startCountdown(scope);
    startRedirect(scope);
  }

  function startCountdown(scope) {
    window.clearInterval(countdownTimer);
    var el = scope.querySelector("[data-countdown]");
    if (!el) return;
    // From the server's remaining seconds, not its clock: a wrong device clock cannot shift the deadline.
    var deadline = Date.now() + parseInt(el.getAttribute("data-seconds"), 10) * 1000;
    var box = el.closest(".deadline");
    function tick() {
      var left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      el.textContent = left > 0 ? clock(left) : text.expired;
      if (left <= 0) {
        window.clearInterval(countdownTimer);
        if (box) box.classList.add("deadline--over");
        schedulePoll(1000);
      }
    }
    tick();
    countdownTimer = window.setInterval(tick, 1000);
  }

  function startRedirect(scope) {
    window.clearInterval(redirectTimer);
    var box = scope.querySelector("[data-redirect-url]");
    if (!box) return;
    var url = box.getAttribute("data-redirect-url");
    if (!/^https?:\/\//i.test(url)) return;
    var left = parseInt(box.getAttribute("data-seconds"), 10) || 5;
    var counter = box.querySelector("[data-redirect-count]");
    var cancel = box.querySelector("[data-redirect-cancel]");
    redirectTimer = window.setInterval(function () {
      left -= 1;
      if (counter) counter.textContent = String(Math.max(left, 0));
      if (left <= 0) {
        window.clearInterval(redirectTimer);
        window.location.assign(url);
      }
    }, 1000);
    if (cancel) {
      cancel.addEventListener("click", function () {
        window.clearInterval(redirectTimer);
        cancel.hidden = true;
        var note = counter && counter.parentNode;
        if (note) note.hidden = true;
        announce(text.redirectCancelled);
      });
    }
  }

  /* --- polling ---------------------------------------------------------------------------------- */

  function fingerprint(data) {
    var paid = data.paymentDetails ? data.paymentDetails.paidAmount : "";
    var payments = (data.invoiceTransactions || []).map(function (t) {
      return t.id + ":" + t.status + ":" + t.confirmations;
    });
    return data.status + "|" + paid + "|" + payments.join(",");
  }

  function isLive() {
    var section = live();
    return section && section.hasAttribute("data-live");
  }

  function schedulePoll(ms) {
    window.clearTimeout(pollTimer);
    if (!isLive() && !refreshing) return;
    pollTimer = window.setTimeout(poll, ms === undefined ? delayMs : ms);
  }

  function poll() {
    if (document.hidden) return; // resumed by visibilitychange
    fetch(apiUrl, { headers: { Accept: "application/json" }, cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        if (response.status === 429) {
          var retry = parseInt(response.headers.get("Retry-After") || "0", 10) * 1000;
          delayMs = Math.min(Math.max(retry, delayMs * 2), 60000);
          return null;
        }
        if (!response.ok) throw new Error(String(response.status));
        delayMs = pollMs;
        return response.json();
      })
      .then(function (data) {
        if (data && fingerprint(data) !== live().getAttribute("data-fingerprint")) return refresh();
      })
      .catch(function () {
        delayMs = Math.min(delayMs * 2, 60000);
      })
      .then(function () { schedulePoll(); });
  }

  function refresh() {
    if (refreshing) return Promise.resolve();
    refreshing = true;
    var url = pageUrl + "?partial=live";
    return fetch(url, { cache: "no-store", credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.text();
      })
      .then(function (html) {
        var holder = document.createElement("template");
        holder.innerHTML = html.trim();
        var fresh = holder.content.querySelector("#pay-live");
        var old = live();
        if (!fresh || !old) return;
        var statusChanged = fresh.getAttribute("data-status") !== old.getAttribute("data-status");
        var focused = document.activeElement;
        var hadFocus = focused && old.contains(focused);
        var focusId = hadFocus && focused.id;
        old.replaceWith(fresh);
        enhance(fresh);
        document.title = fresh.getAttribute("data-title") || document.title;
        if (statusChanged) announce(fresh.getAttribute("data-headline") || "");
        if (hadFocus) {
          var target = (focusId && document.getElementById(focusId)) || document.getElementById("status-title");
          if (target) target.focus();
        }
      })
      .finally(function () { refreshing = false; });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) schedulePoll(0);
  });

  /* --- copy buttons ----------------------------------------------------------------------------- */

  function copyText(value) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(value);
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = value;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy")); }
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var label = button.querySelector(".copy__text");
    copyText(button.getAttribute("data-copy")).then(function () {
      button.classList.add("copy--done");
      if (label) label.textContent = text.copied;
      announce(text.copied);
      window.setTimeout(function () {
        button.classList.remove("copy--done");
        if (label) label.textContent = text.copy;
      }, 2000);
    }, function () { announce(text.copyFailed); });
  });

  /* --- sandbox simulator: submit without leaving the page, then look at once ----------------------- */

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.hasAttribute("data-sandbox")) return;
    event.preventDefault();
    var section = form.closest(".sandbox");
    var message = section && section.querySelector("[data-sandbox-message]");
    var buttons = section ? section.querySelectorAll("button") : [];
    Array.prototype.forEach.call(buttons, function (b) { b.disabled = true; });
    fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    })
      .then(function (response) {
        return response.json().then(function (body) { return { ok: response.ok, body: body }; });
      })
      .then(function (result) {
        if (message) message.textContent = result.ok ? text.sandboxDone : result.body.error || text.sandboxFailed;
        return refresh();
      })
      .catch(function () {
        if (message) message.textContent = text.sandboxFailed;
      })
      .finally(function () {
        Array.prototype.forEach.call(buttons, function (b) { b.disabled = false; });
        schedulePoll();
      });
  });

  enhance(document);
  schedulePoll();
})();
