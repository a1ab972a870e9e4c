// Definitions on every header: each column header whose text names a number or label gets its
// definition as a tooltip and a "?" link to its entry in the page's glossary panel (which cites
// the docs page). The terms come from audit.pages.glossary (GLOSSARY_DATA, defined before this script).
(function () {
  const data = GLOSSARY_DATA;
  const norm = (text) => text.replace(/\s*[↓↑]\s*$/, '').replace(/\s+/g, ' ').trim().toLowerCase();
  function lookup(text) {
    const key = norm(text);
    return data.aliases[key] || data.aliases[key.replace(/ /g, '_')];
  }
  function decorate() {
    const used = new Set();
    document.querySelectorAll('th').forEach((th) => {
      if (th.closest('#glossary')) return;
      const anchor = lookup(th.textContent);
      if (!anchor) return;
      const term = data.terms[anchor];
      th.title = `${term.name}: ${term.definition}`;
      const row = th.parentElement;
      const columnHeader = row.parentElement.tagName === 'THEAD' || row === row.closest('table').rows[0];
      used.add(anchor);
      if (!columnHeader) return;  // a row header (a key-value card): the tooltip, no link to widen it
      th.dataset.priority = data.priorities[norm(th.textContent)] || data.priorities[norm(th.textContent).replace(/ /g, '_')] || 2;
      const link = document.createElement('a');
      link.href = `#glossary-${anchor}`;
      link.className = 'def';
      link.textContent = '?';
      link.title = th.title;
      link.addEventListener('click', (event) => { event.stopPropagation(); document.getElementById('glossary').open = true; });
      th.appendChild(document.createTextNode(' '));
      th.appendChild(link);
    });
    const list = document.getElementById('glossary-terms');
    const shown = used.size ? Array.from(used) : Object.keys(data.terms);
    for (const anchor of shown) {
      const term = data.terms[anchor];
      const dt = document.createElement('dt');
      dt.id = `glossary-${anchor}`;
      dt.textContent = term.name;
      const dd = document.createElement('dd');
      dd.textContent = `${term.definition} (${term.docs})`;
      list.append(dt, dd);
    }
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', decorate); else decorate();
})();
