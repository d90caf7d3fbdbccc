// The public API an application is written against: permission rules, write validators,
// triggers, indexes and `SyncApplication`, with the protocol's types (partitions, keys,
// paths, operations, JSON values, `SyncModel`) and the logger handlers get. Nothing of the
// storage engine, PostgreSQL, the HTTP server, JWT or Hummingbird: the engine implements the
// module's reader and writer protocols (`ObjectSource`, `ObjectTransaction`), and the test
// kit implements them in memory, so an application's rules, validators and triggers are
// tested in-process. See docs/APPS.md.
@_exported import Logging
@_exported import SyncProtocol
