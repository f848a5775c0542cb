/**
 * `.timewarp/state.json`'s schema lives in core (`core/workspace-state.ts`): the ledger must
 * respect it too. Kept under this name for the time machine's files.
 */
export type { State, Transition } from "../core/index.ts";
export { initialState, StateSchema, TransitionSchema } from "../core/index.ts";
