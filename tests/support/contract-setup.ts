import { observePanelResponses } from './panel'

// vitest setupFiles: every panel response of every test file is checked against the OpenAPI document
// (openapi-contract.ts; OPENAPI_CONTRACT=0 turns it off). The document, and the server code it is
// built from, is loaded at the first panel response: a unit test file never pays for it.
if (process.env.OPENAPI_CONTRACT !== '0') observePanelResponses(async (r) => (await import('./openapi-contract')).checkObservedResponse(r))
