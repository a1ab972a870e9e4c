// Every table fits its box with every number in view: a table wider than its box is cut into
// column groups stacked one under the other, each as wide as the box allows, each repeating the
// columns that name a row (headers glossary.js marked data-key, and always the first; a judge or
// auditor column only where the rows differ in it), so every
// number keeps its row's name, its interval and its n beside it; nothing is hidden. The columns of
// one family (glossary.js marked them data-family: citations_verified and _unverified, the facts
// revealed under the technique and by the baseline, ...) go into one group together. The groups of a
// sortable table sort and filter together (sortfilter.js, which runs after this). Runs as the
// page's last element is parsed; a screen wide enough for the whole table leaves it whole.
(function () {
  function headerCells(table) {
    const row = table.tHead ? table.tHead.rows[0] : table.rows[0];
    if (!row) return null;
    for (const cell of row.cells) if (cell.colSpan > 1) return null;  // grouped headers: leave as is
    return Array.from(row.cells);
  }
  function setColumn(table, index, hidden) {
    for (const row of table.rows) {
      const cell = row.cells[index];
      if (cell) cell.style.display = hidden ? 'none' : '';
    }
  }
  function box(table) {
    let parent = table.parentElement;
    if (!parent.classList.contains('scroll')) {
      const wrap = document.createElement('div');
      wrap.className = 'scroll';
      parent.insertBefore(wrap, table);
      wrap.appendChild(table);
      parent = wrap;
    }
    return parent;
  }
  function families(headers, rest) {
    // the columns in units, placed where their first column stands: the columns of one family
    // together (a column between two of them may then go to the next group), every other column alone
    const units = [];
    const byFamily = new Map();
    for (const i of rest) {
      const family = headers[i].dataset.family;
      if (family && byFamily.has(family)) byFamily.get(family).push(i);
      else {
        units.push([i]);
        if (family) byFamily.set(family, units[units.length - 1]);
      }
    }
    return units;
  }
  function groups(table, wrap, headers, rest) {
    // greedy, measured: add a unit of columns to the current group while the table still fits its box
    // with its cells unwrapped (a group that fits only by wrapping every name into slivers is not read);
    // a family too wide for the box on its own is placed column by column
    table.classList.add('fitting');
    rest.forEach((i) => setColumn(table, i, true));
    const out = [];
    let current = [];
    const tooWide = () => table.scrollWidth > wrap.clientWidth;
    const place = (unit) => {
      unit.forEach((i) => setColumn(table, i, false));
      if (current.length && tooWide()) {
        current.forEach((j) => setColumn(table, j, true));
        out.push(current);
        current = [];
      }
      if (unit.length > 1 && tooWide()) {
        unit.forEach((i) => setColumn(table, i, true));
        unit.forEach((i) => place([i]));
      } else current.push(...unit);
    };
    families(headers, rest).forEach(place);
    out.push(current);
    out.forEach((part) => part.sort((a, b) => a - b));  // a group shows its columns in the table's order
    rest.forEach((i) => setColumn(table, i, false));
    table.classList.remove('fitting');
    return out;
  }
  function keep(table, columns, keys) {
    // the keys' cells stay on one line, as measured: the header text wraps instead
    for (const row of table.rows) {
      for (let i = row.cells.length - 1; i >= 0; i -= 1) {
        if (!columns.has(i)) row.deleteCell(i); else if (keys.includes(i) && row.cells[i].tagName === 'TD') row.cells[i].classList.add('keycell');
      }
    }
  }
  function split(table) {
    const headers = headerCells(table);
    if (!headers || headers.length < 3) return;
    const wrap = box(table);
    if (table.scrollWidth <= wrap.clientWidth) return;
    const differs = (i) => new Set(Array.from(table.rows).slice(1).map((r) => (r.cells[i] || {}).textContent)).size > 1;
    const keys = headers.map((th, i) => i).filter((i) => i === 0 || headers[i].dataset.key === 'always'
      || (headers[i].dataset.key === 'varied' && differs(i)));
    const rest = headers.map((th, i) => i).filter((i) => !keys.includes(i));
    const parts = groups(table, wrap, headers, rest);
    if (parts.length < 2) return;  // the keys and one column are already too wide: the box scrolls
    const names = headers.map((th) => th.textContent.replace(/\s*\?$/, '').trim());
    Array.from(table.tBodies[0] ? table.tBodies[0].rows : []).forEach((row, i) => { row.dataset.record = i; });
    const holder = document.createElement('div');
    holder.className = 'colgroups';
    wrap.parentElement.insertBefore(holder, wrap);
    parts.forEach((part, n) => {
      const copy = n === parts.length - 1 ? table : table.cloneNode(true);
      keep(copy, new Set([...keys, ...part]), keys);
      copy.dataset.part = String(n + 1);
      const title = document.createElement('p');
      title.className = 'part';
      title.textContent = `columns ${n + 1} of ${parts.length}: ${names[part[0]]}` +
        (part.length > 1 ? ` … ${names[part[part.length - 1]]}` : '') + ` (${part.length} of ${rest.length}, beside ${keys.map((i) => names[i]).join(', ')})`;
      const scroll = document.createElement('div');
      scroll.className = 'scroll';
      scroll.appendChild(copy);
      holder.append(title, scroll);
    });
    wrap.remove();
  }
  document.querySelectorAll('table').forEach((t) => { if (!t.closest('#glossary')) split(t); });
})();
