import { enableOpenApiContract } from './openapi-contract'

// vitest setupFiles: every panel response of every test file is checked against the OpenAPI document.
enableOpenApiContract()
