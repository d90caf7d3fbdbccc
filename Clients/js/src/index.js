// The PartitionSync browser SDK: standard ES modules, no dependencies.
export { SyncClient, PartitionHandle } from './SyncClient.js';
export { SyncError } from './protocol/SyncError.js';
export { Path } from './protocol/Path.js';
export { checkPartition } from './protocol/Partition.js';
export { applyOperations, checkOperation } from './protocol/OperationApplier.js';
export { blobReferences, checkBlobReference, digestOf } from './protocol/BlobReference.js';
export { IndexedDBStore } from './store/IndexedDBStore.js';
export { MemoryStore } from './store/MemoryStore.js';
export { BrowserTabs, SoloTabs } from './tabs/Tabs.js';
export { systemClock, ManualClock } from './Clock.js';
