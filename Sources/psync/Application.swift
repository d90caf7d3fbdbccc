import RChat
import SyncServer

/// The application `psync` serves and administers: the RChat back end.
///
/// Another application replaces `RChat.application` here with its own rules, triggers and
/// indexes (see docs/TRIGGERS.md).
enum Application {
    static var current: SyncApplication { RChat.application }
}
