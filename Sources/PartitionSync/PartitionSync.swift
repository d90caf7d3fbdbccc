// The public API an application is written against: permission rules, write validators,
// triggers, indexes and `SyncApplication`, with the protocol's types (partitions, keys,
// paths, operations, JSON values, `SyncModel`) and the logger handlers get. Nothing of the
// HTTP server, JWT or Hummingbird. See docs/APPS.md.
//
// Of the storage module only the change events and index declarations are public; the rest
// of the engine is `package`: visible inside PartitionSync's own package, not to apps.
@_exported import Logging
@_exported import SyncProtocol
@_exported import SyncStorage
