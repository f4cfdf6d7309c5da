// The colour theme: the system's (prefers-color-scheme) unless the reader
// chose one with the header's toggle, remembered in localStorage. The
// theme is the data-theme attribute on <html>, which style.css reads.
export type Theme = 'light' | 'dark';

const KEY = 'lookout.theme';
const query = '(prefers-color-scheme: dark)';

function stored(): Theme | null {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : null;
  } catch {
    return null;
  }
}

function system(): Theme {
  return typeof matchMedia !== 'undefined' && matchMedia(query).matches ? 'dark' : 'light';
}

/** effectiveTheme is the reader's choice, else the system's. */
export function effectiveTheme(): Theme {
  return stored() ?? system();
}

function apply() {
  document.documentElement.dataset.theme = effectiveTheme();
}

/** initTheme sets the theme before the first paint and follows the
 * system's setting while the reader has not chosen one. */
export function initTheme() {
  apply();
  if (typeof matchMedia !== 'undefined') matchMedia(query).addEventListener('change', apply);
}

/** toggleTheme switches to the other theme. Choosing the system's own
 * theme forgets the choice, so the page follows the system again. */
export function toggleTheme(): Theme {
  const next: Theme = effectiveTheme() === 'dark' ? 'light' : 'dark';
  try {
    if (next === system()) localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, next);
  } catch {
    /* storage refused: the choice lasts for this page only */
  }
  document.documentElement.dataset.theme = next;
  return next;
}
