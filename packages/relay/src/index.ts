export { type OidcConfig, type RelayConfig, readRelayConfig } from './config.js';
export type { AdminToken, RelayContext } from './context.js';
export { importLegacyConfig, type LegacyImportSummary } from './legacy/legacy-import.js';
export { RelayServer } from './server.js';
