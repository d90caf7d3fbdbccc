import ArgumentParser
import Foundation
import Logging
import SyncServer

/// Email verification and external identity providers (docs/SECURITY.md, "Identity").
struct IdentityOptions: ParsableArguments {
    private static var environment: [String: String] { ProcessInfo.processInfo.environment }

    @Option(name: .customLong("smtp-url"), help: "Mail server for verification codes: smtps:// (TLS), smtp+starttls:// (STARTTLS required) or smtp:// (in the clear), then [user:password@]host[:port] (env PSYNC_SMTP_URL). Without it codes are written to the log.")
    var smtpURLOption: String?
    var smtpURL: String? { smtpURLOption ?? Self.environment["PSYNC_SMTP_URL"].flatMap { $0.isEmpty ? nil : $0 } }

    @Option(name: .customLong("smtp-ca-file"), help: "PEM file of the certificate authorities the mail server's certificate is checked against, instead of the system's (env PSYNC_SMTP_CA_FILE).")
    var smtpCAFileOption: String?
    var smtpCAFile: String? { smtpCAFileOption ?? Self.environment["PSYNC_SMTP_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 } }

    @Option(name: .customLong("mail-from"), help: "The From address of the server's mail (env PSYNC_MAIL_FROM).")
    var mailFrom: String = Self.environment["PSYNC_MAIL_FROM"] ?? "no-reply@localhost"

    @Option(name: .customLong("service-name"), help: "The name the server's mail gives the service (env PSYNC_SERVICE_NAME).")
    var serviceName: String = Self.environment["PSYNC_SERVICE_NAME"] ?? "PartitionSync"

    @Option(name: .customLong("email-verification"), help: "required or off; default required when --smtp-url is set, else off (env PSYNC_EMAIL_VERIFICATION).")
    var emailVerificationOption: String?
    var emailVerification: String? { emailVerificationOption ?? Self.environment["PSYNC_EMAIL_VERIFICATION"].flatMap { $0.isEmpty ? nil : $0 } }

    @Option(name: .customLong("verification-code-ttl"), help: "Seconds a verification code works; an account unverified for this long gives its email up (env PSYNC_VERIFICATION_CODE_TTL).")
    var codeLifetime: Int = EnvironmentDefault.value("PSYNC_VERIFICATION_CODE_TTL", default: 24 * 3600)

    @Option(name: .customLong("verification-resend-interval"), help: "Seconds between two codes sent to one account (env PSYNC_VERIFICATION_RESEND_INTERVAL).")
    var resendInterval: Int = EnvironmentDefault.value("PSYNC_VERIFICATION_RESEND_INTERVAL", default: 60)

    func validate() throws {
        try EnvironmentDefault.check()
        try OptionBounds.check([
            OptionBounds("--verification-code-ttl", env: "PSYNC_VERIFICATION_CODE_TTL", codeLifetime, atLeast: 1),
            OptionBounds("--verification-resend-interval", env: "PSYNC_VERIFICATION_RESEND_INTERVAL", resendInterval, atLeast: 0),
        ])
    }

    @Option(name: .customLong("oidc-issuer"), help: "Issuer of an OpenID Connect provider whose access tokens are accepted (env PSYNC_OIDC_ISSUER).")
    var oidcIssuerOption: String?
    var oidcIssuer: String? { oidcIssuerOption ?? Self.environment["PSYNC_OIDC_ISSUER"].flatMap { $0.isEmpty ? nil : $0 } }

    @Option(name: .customLong("oidc-audience"), help: "The audience its tokens must name (env PSYNC_OIDC_AUDIENCE).")
    var oidcAudienceOption: String?
    var oidcAudience: String? { oidcAudienceOption ?? Self.environment["PSYNC_OIDC_AUDIENCE"].flatMap { $0.isEmpty ? nil : $0 } }

    @Option(name: .customLong("oidc-jwks-url"), help: "Its key set's URL; default read from the issuer's discovery document (env PSYNC_OIDC_JWKS_URL).")
    var oidcJWKSURLOption: String?
    var oidcJWKSURL: String? { oidcJWKSURLOption ?? Self.environment["PSYNC_OIDC_JWKS_URL"].flatMap { $0.isEmpty ? nil : $0 } }

    /// Sets `auth`'s verification and providers; a setting that cannot work is a `ValidationError`.
    func apply(to auth: inout AuthConfiguration, logger: Logger) throws {
        var verification = EmailVerificationConfiguration()
        verification.serviceName = serviceName
        verification.codeLifetime = .seconds(codeLifetime)
        verification.resendInterval = .seconds(resendInterval)
        if let smtpURL {
            let helloName = ProcessInfo.processInfo.hostName
            guard
                let settings = SMTPMailer.Settings(
                    url: smtpURL, sender: mailFrom, helloName: helloName.isEmpty ? "localhost" : helloName, caFile: smtpCAFile)
            else {
                throw ValidationError("--smtp-url is smtps://, smtp+starttls:// or smtp://, then [user:password@]host[:port]")
            }
            verification.mailer = SMTPMailer(settings: settings, logger: logger)
        }
        switch emailVerification?.lowercased() {
        case nil: verification.required = smtpURL != nil
        case "required": verification.required = true
        case "off": verification.required = false
        default: throw ValidationError("--email-verification is required or off")
        }
        if !verification.required {
            logger.warning(
                "email addresses are not verified: anyone may register any address, and rules that name emails trust it; set PSYNC_SMTP_URL (docs/SECURITY.md, \"Identity\")")
        } else if smtpURL == nil {
            logger.warning("no mail server (PSYNC_SMTP_URL): verification codes are written to this log")
        }
        auth.emailVerification = verification
        switch (oidcIssuer, oidcAudience) {
        case (nil, nil):
            break
        case (let issuer?, let audience?):
            var jwksURL: URL?
            if let oidcJWKSURL {
                guard let url = URL(string: oidcJWKSURL), url.scheme != nil else { throw ValidationError("--oidc-jwks-url is not a URL") }
                jwksURL = url
            }
            auth.identityProviders = [IdentityProviderConfiguration(issuer: issuer, audience: audience, jwksURL: jwksURL)]
        default:
            throw ValidationError("--oidc-issuer and --oidc-audience go together")
        }
    }
}
