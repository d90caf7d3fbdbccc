/// How accounts verify their email (docs/SECURITY.md, "Identity").
package struct EmailVerificationConfiguration: Sendable {
    /// Whether a registered email counts only once its owner enters the code mailed to it.
    /// When `false`, every registered email counts as verified at once: for development and
    /// for deployments whose accounts an operator makes. Default `false`; `psync serve` turns
    /// it on when a mail server is configured, or with `PSYNC_EMAIL_VERIFICATION=required`.
    package var required: Bool = false
    /// Where the codes go; `nil`: the server's log (``LogMailer``).
    package var mailer: (any Mailer)?
    /// The name mails give the service (`Your <name> verification code`). Default `PartitionSync`.
    package var serviceName: String = "PartitionSync"
    /// How long a code may be used. An account that has not verified its email within this
    /// time also gives the email up to the next registration of it. Default 24 hours.
    package var codeLifetime: Duration = .seconds(24 * 3600)
    /// Shortest time between two codes sent to one account. Default 60 seconds.
    package var resendInterval: Duration = .seconds(60)
    /// Wrong guesses one code takes before it is spent. Default 5.
    package var maximumAttempts: Int = 5

    package init() {}
}
