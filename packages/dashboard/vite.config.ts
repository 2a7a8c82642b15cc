/**
 * The dashboard's build (issue 11): one SPA under `/`, its hashed assets under `/assets/`, which
 * the server serves from `dist/` (`http/DashboardHttp.ts`). JSX goes through Vite's own
 * transformer (oxc), so no React plugin is needed for a production build; `npm run dev -w
 * @bosun/dashboard` proxies `/api` to a Bosun on :8080 while working on the screens.
 */
import { defineConfig } from "vite"

export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  oxc: { jsx: { runtime: "automatic" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 900
  },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } }
})
