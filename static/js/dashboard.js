/* Kassa dashboard: small progressive enhancements. Every page works without this file. */
(function () {
  "use strict";

  var root = document.documentElement;
  root.classList.remove("no-js");
  root.classList.add("js");

  function ready(fn) {
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", fn);
    } else {
      fn();
    }
  }

  // --- phone navigation --------------------------------------------------------------------------
  function setupNav() {
    var toggle = document.querySelector("[data-nav-toggle]");
    var sidebar = document.getElementById("sidebar");
    if (!toggle || !sidebar) return;
    toggle.addEventListener("click", function () {
      var open = sidebar.classList.toggle("nav-open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && sidebar.classList.contains("nav-open")) {
        sidebar.classList.remove("nav-open");
        toggle.setAttribute("aria-expanded", "false");
        toggle.focus();
      }
    });
  }

  // --- copy buttons ------------------------------------------------------------------------------
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      try {
        document.execCommand("copy") ? resolve() : reject(new Error("copy refused"));
      } catch (error) {
        reject(error);
      } finally {
        document.body.removeChild(area);
      }
    });
  }

  function setupCopy() {
    document.querySelectorAll("[data-copy]").forEach(function (button) {
      button.hidden = false;
      var label = button.querySelector("[data-copy-label]");
      button.addEventListener("click", function () {
        copyText(button.getAttribute("data-copy")).then(
          function () {
            if (label) label.textContent = "Copied";
            window.setTimeout(function () { if (label) label.textContent = "Copy"; }, 2000);
          },
          function () {
            if (label) label.textContent = "Select and copy";
          }
        );
      });
    });
  }

  // --- confirmations -----------------------------------------------------------------------------
  function setupConfirm() {
    document.addEventListener("submit", function (event) {
      var button = event.submitter || event.target.querySelector("[data-confirm]");
      var message = button && button.getAttribute("data-confirm");
      if (message && !window.confirm(message)) {
        event.preventDefault();
      }
    });
  }

  // --- invoice items -----------------------------------------------------------------------------
  // Display only: the server rounds and adds the prices itself. BigInt keeps the sum exact (no floats).
  var PRICE = /^\s*(-)?(\d*)(?:\.(\d*))?\s*$/;

  function parsePrice(text, places) {
    var match = PRICE.exec(text);
    if (!match || (!match[2] && !match[3])) return null;
    var digits = (match[3] || "");
    var whole = BigInt((match[2] || "0") + digits.slice(0, places).padEnd(places, "0"));
    var rest = digits.slice(places);
    if (rest && rest.charAt(0) >= "5") whole += 1n; // half up, away from zero, like ROUND_HALF_UP
    return match[1] ? -whole : whole;
  }

  function formatScaled(value, places) {
    var negative = value < 0n;
    var text = (negative ? -value : value).toString().padStart(places + 1, "0");
    var whole = places ? text.slice(0, -places) : text;
    var fraction = places ? "." + text.slice(-places) : "";
    return (negative ? "-" : "") + whole + fraction;
  }

  function setupInvoiceForm() {
    var form = document.querySelector("[data-invoice-form]");
    if (!form) return;
    var list = form.querySelector("[data-item-rows]");
    var add = form.querySelector("[data-add-row]");
    var totalBox = form.querySelector("[data-items-total]");
    var totalValue = form.querySelector("[data-total-value]");
    var totalCurrency = form.querySelector("[data-total-currency]");
    var currency = form.querySelector("[name=invoice_currency]");
    var decimals = JSON.parse(form.getAttribute("data-decimals") || "{}");

    function rows() { return Array.prototype.slice.call(list.querySelectorAll("[data-item-row]")); }

    function renumber() {
      rows().forEach(function (row, index) {
        var n = index + 1;
        var inputs = row.querySelectorAll("input");
        var labels = row.querySelectorAll("label");
        inputs[0].id = "item-name-" + n;
        inputs[1].id = "item-price-" + n;
        labels[0].setAttribute("for", inputs[0].id);
        labels[0].textContent = "Item " + n + " name";
        labels[1].setAttribute("for", inputs[1].id);
        labels[1].textContent = "Item " + n + " price";
        var remove = row.querySelector("[data-remove-row] .visually-hidden");
        if (remove) remove.textContent = "Remove item " + n;
      });
      var many = rows().length > 1;
      rows().forEach(function (row) { row.querySelector("[data-remove-row]").hidden = !many; });
    }

    function updateTotal() {
      var code = currency ? currency.value : "";
      var places = decimals[code];
      if (places === undefined) { totalBox.hidden = true; return; }
      var sum = 0n;
      var any = false;
      var ok = rows().every(function (row) {
        var text = row.querySelectorAll("input")[1].value;
        if (!text.trim()) return true;
        var value = parsePrice(text, places);
        if (value === null) return false;
        sum += value;
        any = true;
        return true;
      });
      totalBox.hidden = !(ok && any);
      totalValue.textContent = formatScaled(sum, places);
      totalCurrency.textContent = code.toUpperCase();
    }

    add.hidden = false;
    add.addEventListener("click", function () {
      var template = rows()[0].cloneNode(true);
      template.classList.remove("item-row--error");
      template.querySelectorAll(".error").forEach(function (node) { node.remove(); });
      template.querySelectorAll("input").forEach(function (input) { input.value = ""; });
      list.appendChild(template);
      renumber();
      template.querySelector("input").focus();
    });
    list.addEventListener("click", function (event) {
      var button = event.target.closest("[data-remove-row]");
      if (!button || rows().length < 2) return;
      var row = button.closest("[data-item-row]");
      var next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      renumber();
      updateTotal();
      if (next) next.querySelector("input").focus();
    });
    list.addEventListener("input", updateTotal);
    if (currency) currency.addEventListener("change", updateTotal);
    renumber();
    updateTotal();
  }

  ready(function () {
    setupNav();
    setupCopy();
    setupConfirm();
    setupInvoiceForm();
  });
})();
