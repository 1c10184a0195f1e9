import { readFileSync } from 'node:fs';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vitest/config';

const outDir = '../internal/manager/ui/dist';

// The build goes straight into the Go package that embeds it (internal/manager/ui, //go:embed
// all:dist). emptyOutDir clears the folder first, so keepFile writes dist/.keep back as it was:
// the committed placeholder that lets `go build` work without a UI build.
function keepFile(): Plugin {
  let keep = '';
  return {
    name: 'slipway-keep-dist-placeholder',
    apply: 'build',
    buildStart() {
      try {
        keep = readFileSync(new URL(`${outDir}/.keep`, import.meta.url), 'utf8');
      } catch {
        keep = '';
      }
    },
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: '.keep', source: keep });
    },
  };
}

export default defineConfig({
  plugins: [react(), keepFile()],
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // One small app: no inline assets (the CSP allows only 'self').
    assetsInlineLimit: 0,
  },
  server: {
    // `npm run dev` against a manager on https://127.0.0.1:8443 (make dev's), or SLIPWAY_MANAGER.
    proxy: {
      '/api': { target: process.env.SLIPWAY_MANAGER ?? 'https://127.0.0.1:8443', changeOrigin: true, secure: false },
    },
  },
  test: {
    environment: 'jsdom',
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
    restoreMocks: true,
    // The theme is read as text by its contrast test (styles/contrast.test.ts).
    css: { include: [/theme\.css/] },
  },
});
