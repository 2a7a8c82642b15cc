/**
 * What other features use of this feature: its public module (they import nothing else of it).
 */
export { OrgAccess } from "./OrgAccess.ts"
export { OrganizationsRepo } from "./OrganizationsRepo.ts"
