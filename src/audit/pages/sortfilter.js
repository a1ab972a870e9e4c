// Sort and filter for the reports: click a column header of a table.data to sort by it (again to
// reverse); type in the box above a table.data or a .cards list to keep only matching rows/cards.
// A table fit.js cut into column groups (.colgroups) is one table here: its groups' rows are the
// same records, sorted and filtered together, with one box above them. Waits for the page's other
// scripts (glossary.js, fit.js) to finish. Only moves and hides existing elements; reads
// textContent, never writes HTML.
(function () {
  "use strict";
  function box(label, before) {
    var input = document.createElement("input");
    input.type = "search";
    input.className = "filter";
    input.placeholder = "filter " + label + "…";
    input.setAttribute("aria-label", "filter " + label);
    before.parentNode.insertBefore(input, before);
    return input;
  }
  function text(item) {
    return item.map(function (element) { return element.textContent; }).join(" ").toLowerCase();
  }
  function filterer(input, items) {  // items: each a list of the elements that show one record
    input.addEventListener("input", function () {
      var q = input.value.trim().toLowerCase();
      items.forEach(function (item) {
        var hidden = q !== "" && text(item).indexOf(q) < 0;
        item.forEach(function (element) { element.hidden = hidden; });
      });
    });
  }
  function key(cell) {
    var value = (cell ? cell.textContent : "").trim();
    var number = parseFloat(value.replace(/^\$/, ""));
    return isNaN(number) ? {n: false, v: value.toLowerCase()} : {n: true, v: number};
  }
  function compare(a, b) {
    if (a.v === "—" || a.v === "") { return 1; }
    if (b.v === "—" || b.v === "") { return -1; }
    if (a.n && b.n) { return a.v - b.v; }
    if (a.n !== b.n) { return a.n ? -1 : 1; }
    return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  }
  function sortable(tables) {
    var bodies = tables.map(function (table) { return table.tBodies[0]; });
    var records = Array.prototype.map.call(bodies[0].rows, function (row, i) {
      return bodies.map(function (body) { return body.rows[i]; });
    });
    var headers = [];
    tables.forEach(function (table) { headers = headers.concat(Array.prototype.slice.call(table.tHead.rows[0].cells)); });
    filterer(box("rows", tables[0].closest(".colgroups") || tables[0].closest(".scroll") || tables[0]), records);
    tables.forEach(function (table, part) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        th.classList.add("sortable");
        if (!th.title) { th.title = "sort by " + th.textContent.trim(); }
        th.addEventListener("click", function () {
          var down = th.getAttribute("aria-sort") === "ascending";
          headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", down ? "descending" : "ascending");
          var blank = /^(—|)$/;
          records.slice().sort(function (a, b) {
            var x = key(a[part].cells[column]), y = key(b[part].cells[column]);
            var order = compare(x, y);
            if (down && !blank.test(x.v) && !blank.test(y.v)) { order = -order; }
            return order;
          }).forEach(function (record) {
            record.forEach(function (row, i) { bodies[i].appendChild(row); });
          });
        });
      });
    });
  }
  function init() {
    var seen = [];
    document.querySelectorAll("table.data").forEach(function (table) {
      var group = table.closest(".colgroups");
      if (!group) { sortable([table]); return; }
      if (seen.indexOf(group) >= 0) { return; }
      seen.push(group);
      sortable(Array.prototype.slice.call(group.querySelectorAll("table.data")));
    });
    document.querySelectorAll(".cards").forEach(function (list) {
      filterer(box("cards", list), Array.prototype.map.call(list.children, function (card) { return [card]; }));
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
