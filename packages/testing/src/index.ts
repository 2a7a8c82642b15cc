export * from "./Eventually.ts"
export * from "./LogCapture.ts"
export * from "./Provided.ts"
export * from "./TestDatabase.ts"
