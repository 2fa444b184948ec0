import pkg from '../../../package.json'

export const PANEL_VERSION: string = pkg.version
