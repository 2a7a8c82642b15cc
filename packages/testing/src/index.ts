export * from "./LogCapture.ts"
export * from "./TestDatabase.ts"
