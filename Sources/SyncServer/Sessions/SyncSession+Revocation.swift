import Foundation
import Locking
import Logging
import NIOWebSocket
import PartitionSync
import Synchronization
import SyncProtocol
import SyncStorage

extension SyncSession.State {
    /// Takes a credential (at the upgrade or from `auth`). An API key does not expire, so its
    /// session ends `apiKeySessionLifetime` after the key was last presented: the service
    /// sends `auth` again to re-validate the key and extend it.
    mutating func grant(_ credential: Credential, configuration: SessionConfiguration, now: Date) {
        principal = credential.principal
        expires = credential.expires ?? now + configuration.apiKeySessionLifetime.timeInterval
        revokedBy = credential.revokedBy
    }
}

extension SyncSession {
    /// Closes the session if its credential is revoked (the account was deleted, its login
    /// logged out, its API key revoked): `error` `session_revoked`, then close 4001. An
    /// in-memory lookup; the registry calls it whenever the revocations change and on every sweep.
    func closeIfRevoked(_ revocations: RevocationList) {
        let revokedBy = state.withLock { $0.revokedBy }
        guard revocations.revokes(revokedBy) else { return }
        // The registry's observer and its sweep may both find it revoked at once: the first
        // closes, in one locked step, and the other does nothing.
        guard state.withLock({ $0.lifecycle.revoked() }) else { return }
        logger.info("credential revoked; closing the session")
        send(.error(SyncError(.sessionRevoked, "the session's credential was revoked"), partition: nil))
        close(.unknown(4001), SyncError.Code.sessionRevoked.rawValue)
    }
}
