import { defineNitroPlugin } from 'nitropack/runtime'
import { answerClientErrorsWithJson } from '../utils/core/client-errors'

// Requests Node refuses itself (431 over-long query, 400 malformed) get the {"error"} body too.
export default defineNitroPlugin(() => {
  answerClientErrorsWithJson()
})
