import Foundation
import SyncImport
import SyncProtocol
import SyncServer
import SyncStorage

/// Brings the users of an App Services users export in as accounts that keep their ids
/// (docs/MIGRATING.md, "Users"): each new one gets a one-time password-set token for the
/// operator to deliver, and cannot sign in before its owner uses it.
struct UserImporter {
    let store: ObjectStore
    let options: ImportOptions
    let output: Importer.Output

    func run(_ path: String, into report: inout ImportReport) async throws {
        var reader = try MongoExportReader(path: path)
        let accounts = PasswordTokenStore(store: store)
        while true {
            let next = try Importer.nextDocument({ () throws(ImportError) in try reader.next() }) { error in
                report.recordUser(refuse(ImportReport.Refusal(error, collection: nil)))
            }
            guard let source = next else { break }
            let user: AppServicesUser
            do {
                user = try AppServicesUser(document: source.document)
                try AuthService.checkEmail(user.email)
            } catch let error as ImportError {
                report.recordUser(refuse(ImportReport.Refusal(
                    error.located(file: path, documentNumber: source.number, line: source.line), collection: nil)))
                continue
            } catch let error as SyncError {
                report.recordUser(refuse(Importer.refusal(error, source, collection: nil)))
                continue
            }
            if options.dryRun {
                report.recordUser(.imported)
                continue
            }
            let token = Self.newToken()
            let created = try await accounts.importAccount(
                userID: user.id, email: user.email, verified: options.emailsVerified, token: token, lifetime: options.tokenLifetime,
                recordsEvent: options.triggers, reissue: options.reissueTokens)
            switch created {
            case .created, .reissued:
                try output.token(user.id, user.email, token)
                report.recordUser(created == .created ? .imported : .unchanged)
            case .exists:
                report.recordUser(.unchanged)
            case .conflict(let reason):
                report.recordUser(refuse(Importer.refusal(SyncError(.emailTaken, reason), source, collection: nil)))
            }
        }
    }

    private func refuse(_ refusal: ImportReport.Refusal) -> ImportReport.Outcome {
        output.refusal(refusal)
        return .refused(refusal)
    }

    /// 32 random bytes, base64url without padding (43 characters).
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
