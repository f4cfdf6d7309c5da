import { render } from 'preact';
import { prefetchTrace } from './lib/api';
import { parseRoute } from './lib/router';
import { App } from './ui/App';
import './style.css';

const route = parseRoute(location.pathname);
if (route.page === 'trace') prefetchTrace(route.id);

render(<App />, document.getElementById('app')!);
