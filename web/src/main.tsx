import { render } from 'preact';
import { App } from './ui/App';
import './style.css';

render(<App />, document.getElementById('app')!);
