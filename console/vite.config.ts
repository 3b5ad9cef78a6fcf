import { defineConfig } from 'vite';

/**
 * The web console's build (docs/console.md): Preact components in TypeScript, bundled into
 * dist/console, which the Service serves at /console (service/http/console/static-files.ts).
 */
export default defineConfig({
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    target: 'es2022',
    // One file under the size a warning would need: the console is small.
    chunkSizeWarningLimit: 300,
  },
  logLevel: 'warn',
});
