// The cards past the first ones, in files beside the page (<dir>/0000.js ...: each calls
// window.__cardChunk(n, cards)), loaded one per click with a <script> element (a page opened from
// disk may not fetch) and shown as the same <details> views the template writes. Untrusted text
// goes in through textContent only, so it never becomes markup.
(() => {
  const button = document.getElementById('more-cards');
  if (!button) return;
  const sizes = button.dataset.sizes.split(',').map(Number);
  const box = document.querySelector('div.cards');
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  };
  const labelled = (label, text) => { const p = el('p'); p.append(el('b', label), ': ' + (text ?? '')); return p; };
  const view = (c) => {
    const d = el('details');
    const s = el('summary');
    s.append(el('b', c.id), ` gold ${c.gold} (${c.label})${c.suite ? ', ' + c.suite : ''}: `);
    for (const [system, a] of c.answers) {
      if (a === null) s.append(el('span', `${system}: —`, 'pill'));
      else if (a.pred === null || a.pred === undefined) s.append(el('span', `${system}: error`, 'pill err'));
      else s.append(el('span', `${system}: ${a.pred}`, 'pill ' + (a.pass ? 'ok' : 'bad')));
      s.append(' ');
    }
    d.append(s);
    if (c.card) {
      d.append(el('p')); d.lastChild.append(el('b', 'Facts'));
      const ul = el('ul'); for (const f of c.card.facts || []) ul.append(el('li', f)); d.append(ul);
      d.append(labelled('Question', c.card.question));
      if (c.card.claim) {
        const p = el('p'); p.append(el('b', 'Claim'), ': ');
        for (const k of ['subj', 'pred', 'obj']) p.append(el('code', c.card.claim[k]), ' ');
        d.append(p);
      }
      if (c.card.reason) d.append(labelled('Why ' + c.label, c.card.reason));
    } else {
      d.append(el('p', 'Card text not available (no cards file given).', 'note'));
    }
    const t = el('table');
    const head = el('tr');
    for (const h of ['system', 'pred', 'reason', 'raw output']) head.append(el('th', h, 'l'));
    t.append(head);
    for (const [system, a] of c.answers) {
      if (a === null) continue;
      const failed = a.pred === null || a.pred === undefined;
      const tr = el('tr', null, failed ? 'err' : (a.pass ? 'ok' : 'bad'));
      tr.append(el('td', system, 'l'), el('td', failed ? 'error' : a.pred, 'l'));
      const why = el('td', a.reason || '', 'l');
      if (a.error) { why.append(el('br'), el('b', 'error'), ': ' + a.error); }
      if (a.retrieved && a.retrieved.length) {
        const ul = el('ul'); for (const f of a.retrieved) ul.append(el('li', f));
        why.append(el('br'), el('b', 'retrieved'), ':', ul);
      }
      const raw = el('td', null, 'l');
      if (a.raw_output !== null && a.raw_output !== undefined) raw.append(el('pre', a.raw_output));
      tr.append(why, raw);
      t.append(tr);
    }
    d.append(t);
    return d;
  };
  let next = 0;
  const label = () => {
    const left = sizes.slice(next).reduce((a, b) => a + b, 0);
    button.textContent = `Show ${sizes[next].toLocaleString()} more cards (${left.toLocaleString()} not shown)`;
    button.disabled = false;
  };
  window.__cardChunk = (n, cards) => {
    if (n !== next) return;  // a stale or repeated load
    for (const c of cards) box.append(view(c));
    next += 1;
    if (next >= sizes.length) button.remove(); else label();
    const filter = document.querySelector('input.filter');
    if (filter && filter.value) filter.dispatchEvent(new Event('input'));
  };
  button.addEventListener('click', () => {
    button.disabled = true;
    const script = document.createElement('script');
    script.src = `${button.dataset.dir}/${String(next).padStart(4, '0')}.js`;
    script.onerror = () => { button.textContent = `cards file ${script.src} missing: copy the page with its folder`; };
    document.body.append(script);
  });
  label();
})();
