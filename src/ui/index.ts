export type { UiServer, UiServerOptions } from "./server.ts";
export { createUiApp, startUiServer } from "./server.ts";
