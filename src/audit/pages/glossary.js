// Definitions on every header: each column header whose text names a number or label gets its
// definition as a tooltip and a "?" link to its entry in the page's glossary panel (which cites
// the docs page); a header that names a row is marked data-key for fit.js: 'always' (GLOSSARY_DATA.keys:
// model, topic, ...) or 'varied' (varied_keys: judge, ...; a key only where the rows differ in it), and one
// in a family of columns read together (families: citations_verified/_unverified, ...) is marked
// data-family, which fit.js keeps in one column group. The terms come from audit.pages.glossary (GLOSSARY_DATA, defined before
// this script). Runs as the page's last element is parsed, before fit.js copies headers into
// column groups: the "?" links open the panel by one listener on the document, so copies work too.
(function () {
  const data = GLOSSARY_DATA;
  const keys = new Set(data.keys);
  const variedKeys = new Set(data.varied_keys);
  const norm = (text) => text.replace(/\s*[↓↑]\s*$/, '').replace(/\s+/g, ' ').trim().toLowerCase();
  function lookup(text) {
    const key = norm(text);
    return data.aliases[key] || data.aliases[key.replace(/ /g, '_')];
  }
  const inFamily = (name, pattern) => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern);
  const familyOf = (name) => data.families.find((family) => family.some((pattern) => inFamily(name, pattern)));
  const used = new Set();
  document.querySelectorAll('th').forEach((th) => {
    if (th.closest('#glossary')) return;
    const row = th.parentElement;
    const columnHeader = row.parentElement.tagName === 'THEAD' || row === row.closest('table').rows[0];
    const name = norm(th.textContent).replace(/_/g, ' ');
    if (columnHeader && keys.has(name)) th.dataset.key = 'always';
    if (columnHeader && variedKeys.has(name)) th.dataset.key = 'varied';
    const family = columnHeader && familyOf(name);
    if (family) th.dataset.family = family[0];
    const anchor = lookup(th.textContent);
    if (!anchor) return;
    const term = data.terms[anchor];
    th.title = `${term.name}: ${term.definition}`;
    used.add(anchor);
    if (!columnHeader) return;  // a row header (a key-value card): the tooltip, no link to widen it
    const link = document.createElement('a');
    link.href = `#glossary-${anchor}`;
    link.className = 'def';
    link.textContent = '?';
    link.title = th.title;
    th.appendChild(document.createTextNode(' '));
    th.appendChild(link);
  });
  document.addEventListener('click', (event) => {
    if (!event.target.matches || !event.target.matches('th a.def')) return;
    event.stopPropagation();  // not a sort
    document.getElementById('glossary').open = true;
  }, true);
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
})();
