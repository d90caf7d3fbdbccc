/**
 * The interface of the client's durable state, kept by {@link IndexedDBStore} in a browser
 * and by {@link MemoryStore} in tests. Every method is one transaction: what it changes is
 * changed whole or not at all.
 *
 * @typedef {import('../logic/PagePlan.js').ChangeBatch} ChangeBatch
 * @typedef {import('../logic/PagePlan.js').PartitionRecord} PartitionRecord
 * @typedef {import('../logic/Outbox.js').OutboxEntry} OutboxEntry
 * @typedef {import('../logic/View.js').StoredObject} StoredObject
 * @typedef {import('../protocol/OperationApplier.js').Operation} Operation
 * @typedef {import('../protocol/BlobReference.js').BlobReference} BlobReference
 * @typedef {import('../protocol/json.js').JSONObject} JSONObject
 *
 * @typedef {{id: string, seq: number, partition: string, operations: Operation[], savedAt: number}} Draft
 *
 * @typedef {{digest: string, length: number, contentType: string, pendingUpload: boolean, lastUsed: number}} BlobRecord
 *
 * @typedef {object} Store
 * @property {() => Promise<{fresh: boolean}>} open opens (or creates) the store; `fresh` when it was created now
 * @property {(listener: () => void) => void} onWiped called when the store is deleted under the client (site data cleared, evicted)
 * @property {() => void} close
 * @property {(key: string) => Promise<any>} getMeta
 * @property {(values: Record<string, any>) => Promise<void>} setMeta a value `undefined` removes the key
 * @property {(partition: string, open: boolean) => Promise<PartitionRecord>} setOpen
 * @property {() => Promise<PartitionRecord[]>} partitions every partition the store knows
 * @property {(batch: ChangeBatch) => Promise<{confirmed: number}>} applyPage one server page with its cursor
 * @property {(partition: string) => Promise<{server: StoredObject[], pending: OutboxEntry[], drafts: Draft[], record: PartitionRecord | undefined}>} readPartition
 * @property {(entry: {requestId: string, partition: string, operations: Operation[]}) => Promise<OutboxEntry>} enqueue
 * @property {(entries: {requestId: string, partition: string, operations: Operation[]}[]) => Promise<void>} requeue queues writes again after a wipe (request ids kept: those applied already are answered from the server's memory)
 * @property {() => Promise<{entries: OutboxEntry[], blobs: string[]}>} queue the outbox and the attached blobs not yet uploaded
 * @property {(requestId: string, version: number | undefined) => Promise<string | null>} acknowledge returns the write's partition
 * @property {(requestId: string, partition: string, objects: {collection: string, id: string, version: number, deleted: boolean, body?: JSONObject}[]) => Promise<boolean>} reject reverts to the server's states and drops the write; whether it was queued
 * @property {(requestId: string, newRequestId: string) => Promise<boolean>} resendAs gives a write a new request id (after `blob_missing`)
 * @property {(draft: Omit<Draft, 'seq'>) => Promise<Draft>} saveDraft replaces the draft with the same id (which keeps its place)
 * @property {(partition?: string) => Promise<Draft[]>} drafts
 * @property {(id: string) => Promise<boolean>} removeDraft
 * @property {(id: string, requestId: string) => Promise<OutboxEntry | null>} publishDraft moves a draft to the outbox
 * @property {(reference: BlobReference, bytes: ArrayBuffer, pendingUpload: boolean, now: number) => Promise<void>} keepBlob
 * @property {(digest: string, now: number) => Promise<ArrayBuffer | null>} blobBytes marks it used
 * @property {(digest: string) => Promise<BlobRecord | null>} blobRecord
 * @property {(digest: string) => Promise<void>} blobUploaded unpins it
 * @property {(limit: number) => Promise<void>} evictBlobs least recently used, unpinned, until the rest fit `limit` bytes
 * @property {(partition: string, key: {collection: string, id: string} | null, at: number) => Promise<void>} setLocalExpiry
 * @property {(now: number) => Promise<{changed: string[], closed: string[]}>} purgeLocalExpiries
 * @property {() => Promise<number | null>} nextLocalExpiry
 */

export {};
