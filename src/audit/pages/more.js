// The drill-down past its first entries, in files beside the page (<dir>/0000.js ...: each calls
// window.__moreEntries(n, html)), loaded one per click with a <script> element (a page opened from
// disk may not fetch). The html was drawn by the same autoescaping template as the entries in the
// page; it is parsed into an inert <template> (nothing in it runs) and its entries moved in.
(() => {
  const button = document.getElementById('more-entries');
  if (!button) return;
  const sizes = button.dataset.sizes.split(',').map(Number);
  const box = document.getElementById(button.dataset.box);
  const noun = button.dataset.noun;
  let next = 0;
  const label = () => {
    const left = sizes.slice(next).reduce((a, b) => a + b, 0);
    button.textContent = `Show ${sizes[next].toLocaleString()} more ${noun} (${left.toLocaleString()} not shown)`;
    button.disabled = false;
  };
  window.__moreEntries = (n, html) => {
    if (n !== next) return;  // a stale or repeated load
    const inert = document.createElement('template');
    inert.innerHTML = html;
    box.append(inert.content);
    next += 1;
    if (next >= sizes.length) button.remove(); else label();
    const filter = document.querySelector('input.filter');
    if (filter && filter.value) filter.dispatchEvent(new Event('input'));
  };
  button.addEventListener('click', () => {
    button.disabled = true;
    const script = document.createElement('script');
    script.src = `${button.dataset.dir}/${String(next).padStart(4, '0')}.js`;
    script.onerror = () => { button.textContent = `${noun} file ${script.src} missing: copy the page with its folder`; };
    document.body.append(script);
  });
  label();
})();
