import { useEffect, useState } from 'preact/hooks';
import { api } from '../lib/api';
import { onLinkClick, parseRoute, useLocation } from '../lib/router';
import { effectiveTheme, toggleTheme } from '../lib/theme';
import type { Me } from '../lib/types';
import { DashboardPage } from './DashboardPage';
import { DatasetPage } from './DatasetPage';
import { Home } from './Home';
import { NotFound } from './common';
import { SessionPage } from './SessionPage';
import { TracePage } from './TracePage';

export function App() {
  const loc = useLocation();
  const [me, setMe] = useState<Me | null>(null);
  const refreshMe = () => api.me().then(setMe, () => setMe({ user: null, via: '', local_mode: false }));
  useEffect(() => {
    refreshMe();
    document.addEventListener('click', onLinkClick);
    return () => document.removeEventListener('click', onLinkClick);
  }, []);
  const route = parseRoute(loc.path);
  return (
    <div class="app">
      <header class="top">
        <a href="/" class="brand">
          ◎ Lookout
        </a>
        <span class="spacer" />
        <ThemeToggle />
        <Account me={me} onChange={refreshMe} />
      </header>
      <main class={`page page-${route.page}`}>
        {route.page === 'home' && <Home me={me} />}
        {route.page === 'dataset' && <DatasetPage key={route.owner + '/' + route.name} owner={route.owner} name={route.name} search={loc.search} me={me} />}
        {route.page === 'session' && <SessionPage key={route.owner + '/' + route.name + '/' + route.session} owner={route.owner} name={route.name} session={route.session} me={me} />}
        {route.page === 'dashboard' && <DashboardPage key={route.owner + '/' + route.name} owner={route.owner} name={route.name} me={me} />}
        {route.page === 'trace' && <TracePage key={route.id} id={route.id} hash={loc.hash} search={loc.search} me={me} />}
        {route.page === 'notfound' && (
          <NotFound title="Not found" me={me}>
            <p>
              Nothing lives at <code>{route.path}</code>.
            </p>
          </NotFound>
        )}
      </main>
    </div>
  );
}

/** ThemeToggle switches between the light and dark themes (lib/theme). */
function ThemeToggle() {
  const [theme, setTheme] = useState(effectiveTheme);
  // The system's setting may change the theme under the button.
  useEffect(() => {
    const f = () => setTheme(effectiveTheme());
    const mq = matchMedia('(prefers-color-scheme: dark)');
    mq.addEventListener('change', f);
    return () => mq.removeEventListener('change', f);
  }, []);
  const dark = theme === 'dark';
  return (
    <button
      type="button"
      class="theme-toggle"
      aria-pressed={dark}
      aria-label="dark theme"
      title={dark ? 'switch to the light theme' : 'switch to the dark theme'}
      onClick={() => setTheme(toggleTheme())}
    >
      {dark ? '☀' : '☾'}
    </button>
  );
}

function Account(props: { me: Me | null; onChange: () => void }) {
  const { me } = props;
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [pw, setPw] = useState('');
  const [err, setErr] = useState('');
  // A page's "Log in" (openLogin) opens the form.
  useEffect(() => {
    const f = () => setOpen(true);
    addEventListener('lookout:login', f);
    return () => removeEventListener('lookout:login', f);
  }, []);
  if (!me) return null;
  if (me.user)
    return (
      <span class="account">
        {me.via === 'local' ? 'local mode' : me.user.name}
        {me.via === 'session' && (
          <button type="button" class="link" onClick={() => api.logout().then(props.onChange)}>
            log out
          </button>
        )}
      </span>
    );
  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Log in
      </button>
    );
  return (
    <form
      class="login"
      onSubmit={(e) => {
        e.preventDefault();
        api.login(name, pw).then(
          () => {
            setOpen(false);
            props.onChange();
          },
          (x) => setErr(String(x.message)),
        );
      }}
    >
      <input placeholder="user" autoFocus value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <input placeholder="password" type="password" value={pw} onInput={(e) => setPw(e.currentTarget.value)} />
      <button type="submit">Log in</button>
      {err && <span class="error">{err}</span>}
    </form>
  );
}
