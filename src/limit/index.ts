export { localStore } from './store.js'
export type { ScoreStore, StoreResult, StoreSpec, StoreFactory } from './store.js'
