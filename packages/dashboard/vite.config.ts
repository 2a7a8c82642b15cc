/**
 * The dashboard's build (issue 11): one SPA under `/`, its hashed assets under `/assets/`, which
 * the server serves from `dist/` (`http/DashboardHttp.ts`). JSX goes through Vite's own
 * transformer (oxc), so no React plugin is needed for a production build; `npm run dev -w
 * @bosun/dashboard` proxies `/api` to a Bosun on :8080 while working on the screens.
 *
 * A build is always React's production build: Vite otherwise takes `process.env.NODE_ENV` from
 * the environment when set, so a build run under a test runner (`NODE_ENV=test`) would ship
 * React's development build (and JSX compiled for it) — several times slower, with effects run twice
 * under StrictMode.
 *
 * `src/early.ts` is bundled on its own and inlined into `index.html`'s head, so the first
 * screen's requests start while the app's bundle downloads (budget: README "Dashboard budget").
 */
import * as path from "node:path"
import { build } from "rolldown"
import { defineConfig, type Plugin } from "vite"

const inlineEarlyRequests = (): Plugin => ({
  name: "bosun:inline-early-requests",
  async transformIndexHtml() {
    const { output } = await build({
      input: path.join(import.meta.dirname, "src/early.ts"),
      write: false,
      logLevel: "warn",
      output: { format: "iife", minify: true }
    })
    return [{ tag: "script", children: output[0].code, injectTo: "head" }]
  }
})

export default defineConfig(({ command }) => ({
  root: import.meta.dirname,
  base: "/",
  plugins: [inlineEarlyRequests()],
  oxc: { jsx: { runtime: "automatic", development: command !== "build" } },
  define: command === "build" ? { "process.env.NODE_ENV": JSON.stringify("production") } : {},
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 900,
    // Every browser the dashboard supports has `modulepreload`; the polyfill would only cost the first screen.
    modulePreload: { polyfill: false }
  },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } }
}))
