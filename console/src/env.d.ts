// Vite resolves stylesheet imports (uPlot's CSS, loaded with the chart).
declare module '*.css';
