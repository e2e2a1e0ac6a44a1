import APNs
import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

extension APNsSimulator {
    /// Issues a client certificate for `topics`, signed by the simulator's client CA, into
    /// `directory`: `NAME.pem`, `NAME-key.pem`, `NAME.p12` (with `password`) and
    /// `NAME.p12.password`. `validity` defaults to an hour ago … 30 days on; one in the past makes
    /// an expired certificate. Writing the `.p12` needs the `openssl` command.
    public func issueClientCertificate(
        topics: [String],
        directory: String,
        name: String,
        validity: ClosedRange<Date>? = nil,
        password: String
    ) throws -> IssuedClientCertificate {
        try clientCA.issue(topics: topics, directory: directory, name: name, validity: validity, password: password)
    }
}
