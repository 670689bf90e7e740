// tether report: a hash router over the page's sections, search and filters. No network.
(function () {
  "use strict";
  function pages() { return document.querySelectorAll("section.page"); }
  function show() {
    var id = decodeURIComponent((location.hash || "").slice(1)) || document.body.getAttribute("data-home");
    var target = document.getElementById(id), inner = null;
    if (target && !target.classList.contains("page")) {   // an anchor inside a page: show that page, then it
      inner = target;
      target = target.closest("section.page");
    }
    if (!target) { target = document.getElementById(document.body.getAttribute("data-home")); inner = null; }
    pages().forEach(function (s) { s.classList.toggle("on", s === target); });
    document.querySelectorAll("header.top nav a").forEach(function (a) {
      a.classList.toggle("on", a.getAttribute("href") === "#" + target.id ||
        (target.getAttribute("data-nav") && a.getAttribute("href") === "#" + target.getAttribute("data-nav")));
    });
    if (target.getAttribute("data-title")) { document.title = target.getAttribute("data-title"); }
    stickyMargin(target);
    if (inner) { inner.scrollIntoView(); } else { window.scrollTo(0, 0); }
  }
  // what stays on top while scrolling (the header, a page's toolbar) never hides an #anchor's target
  function stickyMargin(page) {
    var top = 0;
    var header = document.querySelector("header.top");
    if (header) { top += header.getBoundingClientRect().height; }
    var bar = page && page.querySelector(".toolbar");
    if (bar) { top += bar.getBoundingClientRect().height; }
    document.documentElement.style.setProperty("--sticky", Math.ceil(top + 8) + "px");
  }
  window.addEventListener("hashchange", show);
  window.addEventListener("resize", function () { stickyMargin(document.querySelector("section.page.on")); });

  // filter rows or events by text and by kind
  function applyFilter(box) {
    var scope = document.getElementById(box.getAttribute("data-scope"));
    if (!scope) { return; }
    var q = (box.querySelector("input[type=search]") || {}).value || "";
    q = q.trim().toLowerCase();
    var off = {};
    box.querySelectorAll("input[type=checkbox][data-kind]").forEach(function (c) { if (!c.checked) { off[c.getAttribute("data-kind")] = true; } });
    var shown = 0;
    scope.querySelectorAll("[data-filter]").forEach(function (el) {
      var kind = el.getAttribute("data-kind") || "";
      var hit = (!q || el.textContent.toLowerCase().indexOf(q) >= 0) && !off[kind];
      el.classList.toggle("hidden", !hit);
      if (hit) { shown += 1; }
    });
    scope.querySelectorAll(".step").forEach(function (st) {
      st.classList.toggle("hidden", !st.querySelector("[data-filter]:not(.hidden)"));
    });
    var count = box.querySelector(".count");
    if (count) { count.textContent = shown + " shown"; }
  }
  document.addEventListener("input", function (ev) {
    var box = ev.target.closest && ev.target.closest("[data-scope]");
    if (box) { applyFilter(box); }
  });
  document.addEventListener("change", function (ev) {
    var box = ev.target.closest && ev.target.closest("[data-scope]");
    if (box) { applyFilter(box); }
  });

  // "every message sent": rebuilt on demand from the run's request data
  document.addEventListener("toggle", function (ev) {
    var d = ev.target;
    if (!d.getAttribute || !d.hasAttribute("data-request") || d.getAttribute("data-filled")) { return; }
    var data = document.getElementById(d.getAttribute("data-source"));
    if (!data) { return; }
    // each request is the previous one of its role cut to `keep` messages, then its new messages
    var reqs = JSON.parse(data.textContent), want = parseInt(d.getAttribute("data-request"), 10);
    var last = {}, full = [];
    for (var i = 0; i <= want; i++) {
      var r = reqs[i];
      full = (last[r.role] || []).slice(0, r.keep).concat(r.messages);
      last[r.role] = full;
    }
    var box = d.querySelector(".full");
    full.forEach(function (m) {
      var div = document.createElement("div");
      div.className = "msg msg-" + m.role;
      var role = document.createElement("div");
      role.className = "role";
      role.textContent = m.role + (m.name ? " · " + m.name : "") + (m.tool_call_id ? " · " + m.tool_call_id : "");
      div.appendChild(role);
      if (m.content) { var t = document.createElement("div"); t.className = "text"; t.textContent = m.content; div.appendChild(t); }
      (m.tool_calls || []).forEach(function (c) {
        var p = document.createElement("pre"); p.textContent = "→ " + c.name + " " + c.arguments; div.appendChild(p);
      });
      box.appendChild(div);
    });
    d.setAttribute("data-filled", "1");
  }, true);

  document.addEventListener("DOMContentLoaded", show);
  if (document.readyState !== "loading") { show(); }
})();
