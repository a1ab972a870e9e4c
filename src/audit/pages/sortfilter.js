// Sort and filter for the reports: click a column header of a table.data to sort by it (again to
// reverse); type in the box above a table.data or a .cards list to keep only matching rows/cards.
// Only moves and hides existing elements; reads textContent, never writes HTML.
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
  function filterer(input, items) {
    input.addEventListener("input", function () {
      var q = input.value.trim().toLowerCase();
      items.forEach(function (item) { item.hidden = q !== "" && item.textContent.toLowerCase().indexOf(q) < 0; });
    });
  }
  function key(cell) {
    var text = (cell ? cell.textContent : "").trim();
    var number = parseFloat(text.replace(/^\$/, ""));
    return isNaN(number) ? {n: false, v: text.toLowerCase()} : {n: true, v: number};
  }
  function compare(a, b) {
    if (a.v === "—" || a.v === "") { return 1; }
    if (b.v === "—" || b.v === "") { return -1; }
    if (a.n && b.n) { return a.v - b.v; }
    if (a.n !== b.n) { return a.n ? -1 : 1; }
    return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  }
  document.querySelectorAll("table.data").forEach(function (table) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    filterer(box("rows", table.closest(".scroll") || table), rows);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.classList.add("sortable");
      th.title = "sort by " + th.textContent.trim();
      th.addEventListener("click", function () {
        var down = th.getAttribute("aria-sort") === "ascending";
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", down ? "descending" : "ascending");
        rows.slice().sort(function (a, b) {
          var order = compare(key(a.cells[column]), key(b.cells[column]));
          var blank = /^(—|)$/;
          if (down && !blank.test(key(a.cells[column]).v) && !blank.test(key(b.cells[column]).v)) { order = -order; }
          return order;
        }).forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  document.querySelectorAll(".cards").forEach(function (list) {
    filterer(box("cards", list), Array.prototype.slice.call(list.children));
  });
})();
