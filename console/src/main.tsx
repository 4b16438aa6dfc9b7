// Entry: renders the console into #app.
import { render } from 'preact';
import { App } from './app.tsx';

render(<App />, document.getElementById('app')!);
