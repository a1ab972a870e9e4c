// Every table fits its box at any width: columns are hidden, least important first (the
// data-priority the glossary gives each header: 3 bookkeeping, then 2 other numbers, then 1 the
// headline numbers; 0, the row's identity, never), until the table fits; a button above it shows them all (the box then scrolls) and
// says how many are hidden. Nothing is hidden on a screen wide enough to show everything.
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
      if (cell && row.cells.length > index) cell.classList.toggle('col-hidden', hidden);
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
  function fit(table) {
    const headers = headerCells(table);
    if (!headers || headers.length < 3) return;
    const wrap = box(table);
    if (table.scrollWidth <= wrap.clientWidth) return;
    const order = headers.map((th, i) => ({ i, p: Number(th.dataset.priority || 2) }))
      .filter((c) => c.i > 0 && c.p > 0)
      .sort((a, b) => b.p - a.p || b.i - a.i);
    const hidden = [];
    for (const c of order) {
      if (table.scrollWidth <= wrap.clientWidth) break;
      setColumn(table, c.i, true);
      hidden.push(c.i);
    }
    if (!hidden.length) return;
    const names = hidden.map((i) => headers[i].textContent.replace('?', '').trim());
    const toggle = document.createElement('button');
    toggle.type = 'button';
    toggle.className = 'columns-toggle';
    const label = (shown) => shown ? `hide the ${hidden.length} extra columns`
      : `${hidden.length} more column${hidden.length > 1 ? 's' : ''}: show all (${names.join(', ')})`;
    toggle.textContent = label(false);
    toggle.setAttribute('aria-expanded', 'false');
    toggle.addEventListener('click', () => {
      const show = toggle.getAttribute('aria-expanded') === 'false';
      hidden.forEach((i) => setColumn(table, i, !show));
      toggle.setAttribute('aria-expanded', String(show));
      toggle.textContent = label(show);
    });
    const filter = wrap.previousElementSibling;  // the sort/filter script's box stays right above its table
    wrap.parentElement.insertBefore(toggle, filter && filter.matches('input.filter') ? filter : wrap);
  }
  function fitAll() { document.querySelectorAll('table').forEach((t) => { if (!t.closest('#glossary')) fit(t); }); }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', fitAll); else fitAll();
})();
