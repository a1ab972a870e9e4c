// The transcript past its first entries waits in <template class="entry-chunk"> blocks (parsed
// but inert: no layout, no images, no scripts); each click moves the next block into the page.
(() => {
  const chunks = Array.from(document.querySelectorAll('template.entry-chunk'));
  const button = document.getElementById('more-entries');
  const box = document.getElementById('transcript');
  if (!button || !box || !chunks.length) return;
  let next = 0;
  const label = () => {
    const left = chunks.slice(next).reduce((n, c) => n + Number(c.dataset.n), 0);
    button.textContent = `Show ${Number(chunks[next].dataset.n).toLocaleString()} more entries (${left.toLocaleString()} not shown)`;
  };
  button.addEventListener('click', () => {
    box.append(document.importNode(chunks[next].content, true));
    next += 1;
    if (next >= chunks.length) button.remove(); else label();
    const filter = document.querySelector('input.filter');
    if (filter && filter.value) filter.dispatchEvent(new Event('input'));
  });
  label();
})();
