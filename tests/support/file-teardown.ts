import { afterAll } from 'vitest'
import { removeTempDirs } from './processes'

// Every test file's temporary folders go when the file is done (its components were stopped in its own afterAll).
afterAll(() => removeTempDirs())
