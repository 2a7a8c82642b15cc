/**
 * The import rules that keep Bosun's shape, checked by `npm run lint` (`lint:imports`) and shown
 * to catch what they forbid in packages/server/test/architecture/ImportRules.test.ts. Packages
 * point down: domain <- runtime; domain <- actors <- server; platform <- server; platform <-
 * testing; the dashboard uses domain's API contract; production code never imports the test kit,
 * and the test kit none of the packages it tests; no import circles. Inside the server,
 * app -> inbound -> features -> outbound -> platform.
 */
const PRODUCTION = "^packages/(domain|platform|runtime|actors|server|dashboard)/src/"

module.exports = {
  forbidden: [
    {
      name: "domain-imports-nothing-of-ours",
      comment: "packages/domain holds schemas, the HTTP contract and errors: no I/O, no other package of ours.",
      severity: "error",
      from: { path: "^packages/domain/src/" },
      to: { path: "^packages/(platform|runtime|actors|server|dashboard|testing)/" }
    },
    {
      name: "platform-imports-nothing-of-ours",
      comment:
        "packages/platform holds process building blocks (embedded Postgres, Redis connection, JSON logger) that the server and the test kit share: it imports no package of ours.",
      severity: "error",
      from: { path: "^packages/platform/src/" },
      to: { path: "^packages/(domain|runtime|actors|server|dashboard|testing)/" }
    },
    {
      name: "runtime-imports-only-domain",
      comment: "The agent runtime runs apart from the control plane and shares only the protocol in domain.",
      severity: "error",
      from: { path: "^packages/runtime/src/" },
      to: { path: "^packages/(platform|actors|server|dashboard|testing)/" }
    },
    {
      name: "actors-import-no-server",
      comment: "The server composes the actors; the actors reach the server only through ports it fills.",
      severity: "error",
      from: { path: "^packages/actors/src/" },
      to: { path: "^packages/(server|dashboard|testing)/" }
    },
    {
      name: "dashboard-uses-only-the-contract",
      comment: "The dashboard talks to the server over HTTP through domain's API contract.",
      severity: "error",
      from: { path: "^packages/dashboard/src/" },
      to: { path: "^packages/(platform|runtime|actors|server|testing)/" }
    },
    {
      name: "production-imports-no-test-kit",
      comment: "Fakes live in test code only.",
      severity: "error",
      from: { path: PRODUCTION },
      to: { path: "^packages/testing/" }
    },
    {
      name: "test-kit-imports-no-package-it-tests",
      comment:
        "The runtime's, the actors' and the server's tests use the test kit, so it imports none of them (what it shares with the server is in packages/platform): no package cycle at test time.",
      severity: "error",
      from: { path: "^packages/testing/" },
      to: { path: "^packages/(runtime|actors|server|dashboard)/" }
    },
    {
      name: "no-circular",
      comment: "No module imports itself through others.",
      severity: "error",
      from: { path: "^packages/" },
      to: { circular: true }
    },
    {
      name: "server-folders-point-down",
      comment:
        "Between packages/server/src's top-level folders imports run one way: app -> inbound -> features -> outbound -> platform.",
      severity: "error",
      from: { path: "^packages/server/src/(features|outbound|platform)/" },
      to: { path: "^packages/server/src/(app|inbound)/" }
    },
    {
      name: "outbound-imports-no-feature",
      comment: "outbound/ (clients, credentials, effect senders) speaks to providers for features and knows none.",
      severity: "error",
      from: { path: "^packages/server/src/outbound/" },
      to: { path: "^packages/server/src/features/" }
    },
    {
      name: "platform-imports-no-feature",
      comment: "platform/ (config, crypto, db, storage, observability) serves every feature and knows none.",
      severity: "error",
      from: { path: "^packages/server/src/platform/" },
      to: { path: "^packages/server/src/(features|outbound)/" }
    },
    {
      name: "features-meet-through-their-public-module",
      comment: "A feature imports another feature only through that feature's public module, index.ts.",
      severity: "error",
      from: { path: "^packages/server/src/features/([^/]+)/" },
      to: {
        path: "^packages/server/src/features/([^/]+)/",
        pathNot: ["^packages/server/src/features/$1/", "^packages/server/src/features/[^/]+/index\\.ts$"]
      }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".json"]
    },
    reporterOptions: { text: { highlightFocused: true } }
  }
}
