import { render } from 'preact';
import { prefetchDataset, prefetchTrace } from './lib/api';
import { parseRoute } from './lib/router';
import { initTheme } from './lib/theme';
import { App } from './ui/App';
import './style.css';

initTheme();

const route = parseRoute(location.pathname);
if (route.page === 'trace') prefetchTrace(route.id);
if (route.page === 'dataset') prefetchDataset(route.owner, route.name);

render(<App />, document.getElementById('app')!);
